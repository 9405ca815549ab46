//! A site's email report recipients: `GET|POST sites/{site}/email-reports`,
//! `DELETE sites/{site}/email-reports/{id}`. All three configure (admins,
//! owners, `configure` keys): the list holds other people's addresses, so
//! viewers do not read it. A recipient is built by core's
//! [`SubscriptionSpec`] against the site's others, as `tally report add`
//! does; posting an address already listed sets its reports to the ones
//! given. A recipient's `id` is its address hash
//! ([`recipient_hash`], the one unsubscribe links name it by), so no
//! address is in a path or an audit entry. The scheduled job sends the
//! reports (`tally_rollup::reports`).

use crate::audit;
use crate::body;
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::permit::site_permit;
use crate::reports::ReportStore;
use crate::site_store::SiteStore;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use tally_core::Millis;
use tally_core::account::{Action, AuditAction};
use tally_core::report_mail::token::recipient_hash;
use tally_core::report_mail::{Subscription, SubscriptionError, SubscriptionSpec};

impl From<SubscriptionError> for ConsoleError {
    fn from(e: SubscriptionError) -> Self {
        let status = match e {
            SubscriptionError::TooMany => 409,
            _ => 400,
        };
        Self::new(status, e.code(), e.to_string())
    }
}

/// A recipient as the console shows it.
#[derive(Debug, Serialize)]
pub struct Recipient {
    /// The address hash (the route's `{id}`).
    pub id: String,
    /// The address.
    pub email: String,
    /// Gets the weekly report.
    pub weekly: bool,
    /// Gets the monthly report.
    pub monthly: bool,
    /// When it was added, Unix ms.
    pub created_at: Millis,
}

impl From<Subscription> for Recipient {
    fn from(s: Subscription) -> Self {
        Self {
            id: recipient_hash(&s.email),
            email: s.email,
            weekly: s.weekly,
            monthly: s.monthly,
            created_at: s.created_at,
        }
    }
}

/// `GET sites/{site}/email-reports`.
#[derive(Debug, Serialize)]
pub struct RecipientList {
    /// The recipients, by address.
    pub recipients: Vec<Recipient>,
}

/// `GET sites/{site}/email-reports`.
pub async fn list<S: SiteStore + ReportStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    site_permit(store, request, site, Action::Configure, now).await?;
    let subs = store.report_subscriptions(site).await?;
    let recipients = subs.into_iter().map(Recipient::from).collect();
    Ok(json_response(200, &RecipientList { recipients }))
}

/// `POST sites/{site}/email-reports`: a [`SubscriptionSpec`]
/// (`{email, weekly?, monthly?}`); answers the recipient as stored.
pub async fn add<S: SiteStore + ReportStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let spec: SubscriptionSpec = body::parse(request, config.max_body)?;
    let existing = store.report_subscriptions(site).await?;
    let sub = spec.build(&existing, now)?;
    let known = existing.iter().any(|s| s.email == sub.email);
    store.put_report_subscription(site, &sub).await?;
    let detail = format!(
        "report recipient {} ({})",
        if known { "changed" } else { "added" },
        sub.kinds()
    );
    let recipient = Recipient::from(sub);
    let target = format!("email-report:{}", recipient.id);
    audit::record(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        &detail,
        now,
    )
    .await?;
    Ok(json_response(if known { 200 } else { 201 }, &recipient))
}

/// `DELETE sites/{site}/email-reports/{id}`.
pub async fn remove<S: SiteStore + ReportStore>(
    store: &S,
    request: &Request,
    site: &str,
    id: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let not_found = || ConsoleError::not_found("recipient_not_found", "no such report recipient");
    let sub = store
        .report_subscriptions(site)
        .await?
        .into_iter()
        .find(|s| recipient_hash(&s.email) == id)
        .ok_or_else(not_found)?;
    if !store.delete_report_subscription(site, &sub.email).await? {
        return Err(not_found());
    }
    let target = format!("email-report:{id}");
    audit::done(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        "report recipient removed",
        now,
    )
    .await
}
