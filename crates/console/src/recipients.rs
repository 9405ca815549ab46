//! A site's email report recipients: `GET|POST sites/{site}/email-reports`,
//! `DELETE sites/{site}/email-reports/{id}` (served by
//! [`crate::collection`]). All three configure (admins,
//! owners, `configure` keys): the list holds other people's addresses, so
//! viewers do not read it. A recipient is built by core's
//! [`SubscriptionSpec`] against the site's others, as `tally report add`
//! does; posting an address already listed sets its reports to the ones
//! given. A recipient's `id` is its address hash
//! ([`recipient_hash`], the one unsubscribe links name it by), so no
//! address is in a path or an audit entry. The scheduled job sends the
//! reports (`tally_rollup::reports`).

use crate::collection::{Added, Call, Collection, CollectionStore, Needs, Removed};
use crate::error::ConsoleError;
use serde::Serialize;
use tally_core::Millis;
use tally_core::product::report_mail::token::recipient_hash;
use tally_core::product::report_mail::{Subscription, SubscriptionError, SubscriptionSpec};

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

/// `sites/{site}/email-reports`.
pub struct Recipients;

impl Collection for Recipients {
    const NOUN: &'static str = "email-report";
    const LISTED: &'static str = "recipients";
    const NEEDS: Needs = Needs::ADMINS;
    type Spec = SubscriptionSpec;
    type Item = Recipient;
    type Answer = Recipient;

    async fn list<S: CollectionStore>(call: Call<'_, S>) -> Result<Vec<Recipient>, ConsoleError> {
        let subs = call.store.report_subscriptions(call.site()).await?;
        Ok(subs.into_iter().map(Recipient::from).collect())
    }

    /// `{email, weekly?, monthly?}`; an address already listed gets the
    /// reports given (200).
    async fn add<S: CollectionStore>(
        call: Call<'_, S>,
        spec: SubscriptionSpec,
    ) -> Result<Added<Recipient>, ConsoleError> {
        let store = call.store;
        let existing = store.report_subscriptions(call.site()).await?;
        let sub = spec.build(&existing, call.now)?;
        let known = existing.iter().any(|s| s.email == sub.email);
        store.put_report_subscription(call.site(), &sub).await?;
        let detail = format!(
            "report recipient {} ({})",
            if known { "changed" } else { "added" },
            sub.kinds()
        );
        let recipient = Recipient::from(sub);
        Ok(Added {
            status: if known { 200 } else { 201 },
            ..Added::new(recipient.id.clone(), detail, recipient)
        })
    }

    async fn remove<S: CollectionStore>(
        call: Call<'_, S>,
        id: &str,
    ) -> Result<Removed, ConsoleError> {
        let store = call.store;
        let not_found =
            || ConsoleError::not_found("recipient_not_found", "no such report recipient");
        let sub = store
            .report_subscriptions(call.site())
            .await?
            .into_iter()
            .find(|s| recipient_hash(&s.email) == id)
            .ok_or_else(not_found)?;
        if !store
            .delete_report_subscription(call.site(), &sub.email)
            .await?
        {
            return Err(not_found());
        }
        Ok(Removed::new(id, "report recipient removed"))
    }
}
