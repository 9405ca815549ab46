//! A site's traffic alerts (issue 23, item 2): `GET|PUT
//! sites/{site}/alerts`, `GET sites/{site}/alerts/log`. All three
//! configure (admins, owners, `configure` keys), as the email reports do:
//! the settings hold other people's addresses, a Slack URL whose path is
//! its credential and the webhook's signing secret, which the people who
//! may change the webhook need to verify what it receives. Viewers get
//! 403.
//!
//! A change is core's [`AlertSpec`] applied to the stored settings by
//! [`AlertSpec::apply`], the function `tally alert set` calls: the same
//! thresholds, addresses and URL rules (plain `http` to this machine only
//! when [`Config::allow_local_urls`], as `tally dev` sets it), and a
//! signing secret made from the system's randomness when a webhook URL is
//! first set or `rotate_secret` asks. Answers show URLs as
//! [`redact_url`] does (scheme and host), as `tally alert show` does; the
//! audit entry says what changed, never a URL or the secret. The job
//! reads the same item (`tally_rollup::alerts`).

use crate::audit;
use crate::body;
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::permit::site_permit;
use crate::site_store::SiteStore;
use crate::store::Fut;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use tally_core::account::{Action, AuditAction};
use tally_core::product::alert::{
    Alert, AlertConfig, AlertConfigError, AlertSettings, AlertSpec, Channel, DeliveryRecord,
    redact_url,
};
use tally_core::{HOUR_MS, Millis};
use tally_store::Store;
use tally_store::alerts::{Delivery, StoredAlert};

/// What the alert routes need of the table: the functions the CLI and the
/// job call.
pub trait AlertStore: Send + Sync {
    /// A site's alert settings, if any were set.
    fn alert_settings(&self, site: &str) -> impl Fut<Option<AlertSettings>>;
    /// Stores a site's alert settings.
    fn put_alert_settings(&self, site: &str, settings: &AlertSettings) -> impl Fut<()>;
    /// The alerts recorded for hours in `[from, to]`, oldest first.
    fn alerts_between(&self, site: &str, from: Millis, to: Millis) -> impl Fut<Vec<StoredAlert>>;
    /// The deliveries of alerts for hours in `[from, to]`, oldest first.
    fn deliveries_between(&self, site: &str, from: Millis, to: Millis) -> impl Fut<Vec<Delivery>>;
}

impl AlertStore for Store {
    fn alert_settings(&self, site: &str) -> impl Fut<Option<AlertSettings>> {
        Store::alert_settings(self, site)
    }
    fn put_alert_settings(&self, site: &str, settings: &AlertSettings) -> impl Fut<()> {
        Store::put_alert_settings(self, site, settings)
    }
    fn alerts_between(&self, site: &str, from: Millis, to: Millis) -> impl Fut<Vec<StoredAlert>> {
        Store::alerts_between(self, site, from, to)
    }
    fn deliveries_between(&self, site: &str, from: Millis, to: Millis) -> impl Fut<Vec<Delivery>> {
        Store::deliveries_between(self, site, from, to)
    }
}

impl From<AlertConfigError> for ConsoleError {
    fn from(e: AlertConfigError) -> Self {
        Self::bad_request(e.code(), e.to_string())
    }
}

/// A site's alert settings as the console shows them: the model's
/// thresholds as stored (`watch`, `min_volume`, `spike_pct`,
/// `spread_pct`, `drop_pct`, `cooldown_hours`), URLs by [`redact_url`].
#[derive(Debug, Serialize)]
pub struct AlertView {
    /// Whether the job judges the site's hours.
    pub enabled: bool,
    /// The thresholds, as fields of the view.
    #[serde(flatten)]
    pub config: AlertConfig,
    /// The addresses mailed.
    pub emails: Vec<String>,
    /// The Slack URL, scheme and host only.
    pub slack_url: Option<String>,
    /// The webhook URL, scheme and host only.
    pub webhook_url: Option<String>,
    /// The webhook's signing secret (`whsec_…`).
    pub webhook_secret: Option<String>,
    /// When they were last saved (`None`: never, these are the defaults).
    pub updated_at: Option<Millis>,
}

impl AlertView {
    fn of(settings: Option<AlertSettings>) -> Self {
        let Some(s) = settings else {
            return Self {
                enabled: false,
                config: AlertConfig::default(),
                emails: Vec::new(),
                slack_url: None,
                webhook_url: None,
                webhook_secret: None,
                updated_at: None,
            };
        };
        Self {
            enabled: s.enabled,
            config: s.config,
            emails: s.emails,
            slack_url: s.slack_url.as_deref().map(redact_url),
            webhook_url: s.webhook_url.as_deref().map(redact_url),
            webhook_secret: s.webhook_secret,
            updated_at: Some(s.updated_at),
        }
    }
}

/// `GET sites/{site}/alerts`.
pub async fn get<S: SiteStore + AlertStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    site_permit(store, request, site, Action::Configure, now).await?;
    let settings = AlertStore::alert_settings(store, site).await?;
    Ok(json_response(200, &AlertView::of(settings)))
}

/// `PUT sites/{site}/alerts`: an [`AlertSpec`] (every field optional;
/// `""` removes a URL; `rotate_secret: true` makes a new signing secret);
/// answers the settings as stored.
pub async fn put<S: SiteStore + AlertStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let spec: AlertSpec = body::parse(request, config.max_body)?;
    let current = AlertStore::alert_settings(store, site).await?;
    let fresh_secret = crate::auth::random::<32>()?;
    let settings = spec.apply(
        current.as_ref(),
        &fresh_secret,
        config.allow_local_urls,
        now,
    )?;
    AlertStore::put_alert_settings(store, site, &settings).await?;
    let detail = change_detail(current.as_ref(), &settings);
    audit::record(
        store,
        &permit,
        AuditAction::SiteChanged,
        "alerts",
        &detail,
        now,
    )
    .await?;
    Ok(json_response(200, &AlertView::of(Some(settings))))
}

/// What a change did, for the audit log: no address, URL or secret.
fn change_detail(before: Option<&AlertSettings>, after: &AlertSettings) -> String {
    let mut parts = Vec::new();
    let was_on = before.is_some_and(|b| b.enabled);
    if after.enabled != was_on {
        parts.push(
            if after.enabled {
                "turned on"
            } else {
                "turned off"
            }
            .to_owned(),
        );
    }
    let config = before.map_or_else(AlertConfig::default, |b| b.config);
    if after.config != config {
        parts.push("thresholds changed".to_owned());
    }
    if before.map_or(&[][..], |b| &b.emails[..]) != after.emails.as_slice() {
        parts.push(format!("{} alert addresses", after.emails.len()));
    }
    let url = |name: &str, old: Option<&String>, new: Option<&String>| match (old, new) {
        (None, Some(_)) => Some(format!("{name} URL set")),
        (Some(_), None) => Some(format!("{name} URL removed")),
        (Some(a), Some(b)) if a != b => Some(format!("{name} URL changed")),
        _ => None,
    };
    parts.extend(url(
        "Slack",
        before.and_then(|b| b.slack_url.as_ref()),
        after.slack_url.as_ref(),
    ));
    parts.extend(url(
        "webhook",
        before.and_then(|b| b.webhook_url.as_ref()),
        after.webhook_url.as_ref(),
    ));
    let old_secret = before.and_then(|b| b.webhook_secret.as_ref());
    if old_secret.is_some()
        && after.webhook_secret.is_some()
        && old_secret != after.webhook_secret.as_ref()
    {
        parts.push("signing secret rotated".to_owned());
    }
    if parts.is_empty() {
        "alert settings saved, unchanged".to_owned()
    } else {
        format!("alert settings: {}", parts.join(", "))
    }
}

/// Hours the log looks back unless `hours` says otherwise: a week.
pub const DEFAULT_LOG_HOURS: i64 = 168;
/// The furthest back: the deliveries' 30 days (`tally_store::alerts`).
pub const MAX_LOG_HOURS: i64 = 30 * 24;
/// The most alerts and deliveries one answer lists (the newest).
pub const MAX_LOG_ROWS: usize = 100;

/// One recorded alert: `{kind, hour, observed, baseline, threshold}` and
/// when the job recorded it.
#[derive(Debug, Serialize)]
pub struct AlertEntry {
    /// What fired.
    #[serde(flatten)]
    pub alert: Alert,
    /// When the job recorded it, Unix ms.
    pub recorded_at: Millis,
}

/// One alert's delivery on one channel.
#[derive(Debug, Serialize)]
pub struct DeliveryEntry {
    /// `email`, `slack` or `webhook`.
    pub channel: Channel,
    /// The alert's hour, Unix ms.
    pub hour: Millis,
    /// Whether it went through.
    pub delivered: bool,
    /// When the next attempt is due (`None`: delivered or given up).
    pub next_at: Option<Millis>,
    /// Every attempt, oldest first (`attempt`, `at`, `status`, `ok`,
    /// `next_at`; with the channel and hour again).
    pub attempts: Vec<DeliveryRecord>,
}

/// `GET sites/{site}/alerts/log`.
#[derive(Debug, Serialize)]
pub struct AlertLog {
    /// The hours looked back.
    pub hours: i64,
    /// The alerts of those hours, newest first (at most
    /// [`MAX_LOG_ROWS`]).
    pub alerts: Vec<AlertEntry>,
    /// Their deliveries, newest first (at most [`MAX_LOG_ROWS`]).
    pub deliveries: Vec<DeliveryEntry>,
}

/// The newest [`MAX_LOG_ROWS`] of a list oldest first, newest first.
fn newest<T>(items: Vec<T>) -> impl Iterator<Item = T> {
    items.into_iter().rev().take(MAX_LOG_ROWS)
}

/// `GET sites/{site}/alerts/log?hours=168`: the alerts and delivery
/// attempts of the last `hours` (1 to 720), newest first, bounded.
pub async fn log<S: SiteStore + AlertStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    // An attempt's HTTP status says what answered at a URL (a port and
    // service oracle if the URL were inside): delivered or failed for the
    // site's configurers, the status for the instance owner only.
    let owner = matches!(&permit.actor, crate::permit::Actor::User(s) if s.user.instance_owner);
    let hours = request
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|p| p.strip_prefix("hours="))
        .map_or(Ok(DEFAULT_LOG_HOURS), |h| {
            h.parse::<i64>().map_err(|_| {
                ConsoleError::bad_request("invalid_hours", "hours is a number of hours, 1 to 720")
            })
        })?
        .clamp(1, MAX_LOG_HOURS);
    let from = now - hours * HOUR_MS;
    let alerts = newest(store.alerts_between(site, from, now).await?)
        .map(|a| AlertEntry {
            alert: a.alert,
            recorded_at: a.at,
        })
        .collect();
    let deliveries = newest(store.deliveries_between(site, from, now).await?)
        .map(|d| DeliveryEntry {
            channel: d.channel,
            hour: d.hour,
            delivered: d.delivered(),
            next_at: d.next_at(),
            attempts: d
                .attempts
                .into_iter()
                .map(|a| DeliveryRecord {
                    status: a.status.filter(|_| owner),
                    ..a
                })
                .collect(),
        })
        .collect();
    Ok(json_response(
        200,
        &AlertLog {
            hours,
            alerts,
            deliveries,
        },
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn settings(spec: AlertSpec, before: Option<&AlertSettings>) -> AlertSettings {
        spec.apply(before, &[9; 32], false, 5).unwrap()
    }

    #[test]
    fn the_view_hides_url_paths_and_keeps_the_secret() {
        let s = settings(
            AlertSpec {
                enabled: Some(true),
                slack_url: Some("https://hooks.slack.com/services/T0/B0/xyz".into()),
                webhook_url: Some("https://hooks.example.com:8443/tally/abc?k=1".into()),
                ..AlertSpec::default()
            },
            None,
        );
        let view = AlertView::of(Some(s.clone()));
        assert_eq!(view.slack_url.as_deref(), Some("https://hooks.slack.com/…"));
        assert_eq!(
            view.webhook_url.as_deref(),
            Some("https://hooks.example.com:8443/…")
        );
        assert_eq!(view.webhook_secret, s.webhook_secret);
        assert_eq!(view.updated_at, Some(5));
        let text = serde_json::to_string(&view).unwrap();
        assert!(!text.contains("xyz") && !text.contains("abc"), "{text}");
        let none = AlertView::of(None);
        assert_eq!((none.enabled, none.updated_at), (false, None));
        assert_eq!(none.config, AlertConfig::default());
        let json: serde_json::Value = serde_json::to_value(&view).unwrap();
        assert_eq!(json["spike_pct"], 300);
        assert_eq!(json["watch"], "both");
    }

    #[test]
    fn the_audit_detail_names_what_changed_and_no_secret() {
        let first = settings(
            AlertSpec {
                enabled: Some(true),
                emails: Some(vec!["ops@example.com".into()]),
                webhook_url: Some("https://hooks.example.com/secret-path".into()),
                ..AlertSpec::default()
            },
            None,
        );
        let d = change_detail(None, &first);
        assert_eq!(
            d,
            "alert settings: turned on, 1 alert addresses, webhook URL set"
        );
        let rotated = AlertSpec {
            rotate_secret: true,
            cooldown_hours: Some(12),
            ..AlertSpec::default()
        }
        .apply(Some(&first), &[8; 32], false, 6)
        .unwrap();
        let d = change_detail(Some(&first), &rotated);
        assert_eq!(
            d,
            "alert settings: thresholds changed, signing secret rotated"
        );
        assert!(!d.contains("whsec_") && !d.contains("secret-path"));
        assert_eq!(
            change_detail(Some(&rotated), &rotated),
            "alert settings saved, unchanged"
        );
    }
}
