//! `GET|POST /api/console/unsubscribe?t=…`: a report recipient leaves a
//! site's weekly or monthly report without signing in. The token
//! (`tally_core::product::report_mail::token`) names the site, the kind and the
//! recipient's address hash, signed with the instance's secret; a valid
//! one removes that kind from the recipient's subscription (the whole
//! subscription when nothing is left) and answers a small HTML page; a
//! forged or stale one answers 400 `invalid_token`. POST is RFC 8058's
//! one-click unsubscribe (`List-Unsubscribe-Post`): no CSRF check, the
//! token is the credential. Nothing logs the token or an address.

use crate::error::ConsoleError;
use lambda_http::{Body, Request, Response};
use std::future::Future;
use tally_core::product::report_mail::render::escape_html;
use tally_core::product::report_mail::{Kind, Subscription, UnsubscribeToken, verify_unsubscribe};
use tally_store::{Store, StoreError};

/// The route's path.
pub const PATH: &str = "/api/console/unsubscribe";

/// What unsubscribing needs of the table.
pub trait ReportStore: Send + Sync {
    /// The instance's unsubscribe secret.
    fn report_secret(&self) -> impl Future<Output = Result<Vec<u8>, StoreError>> + Send;
    /// A site's subscriptions.
    fn report_subscriptions(
        &self,
        site: &str,
    ) -> impl Future<Output = Result<Vec<Subscription>, StoreError>> + Send;
    /// Stores a subscription.
    fn put_report_subscription(
        &self,
        site: &str,
        sub: &Subscription,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Removes a subscription.
    fn delete_report_subscription(
        &self,
        site: &str,
        email: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

impl ReportStore for Store {
    async fn report_secret(&self) -> Result<Vec<u8>, StoreError> {
        Store::report_secret(self).await
    }
    async fn report_subscriptions(&self, site: &str) -> Result<Vec<Subscription>, StoreError> {
        Store::report_subscriptions(self, site).await
    }
    async fn put_report_subscription(
        &self,
        site: &str,
        sub: &Subscription,
    ) -> Result<(), StoreError> {
        Store::put_report_subscription(self, site, sub).await
    }
    async fn delete_report_subscription(
        &self,
        site: &str,
        email: &str,
    ) -> Result<bool, StoreError> {
        Store::delete_report_subscription(self, site, email).await
    }
}

fn invalid() -> ConsoleError {
    ConsoleError::new(
        400,
        "invalid_token",
        "this unsubscribe link is not valid (or was already used)",
    )
}

/// Answers the unsubscribe route.
pub async fn unsubscribe<S: ReportStore>(
    store: &S,
    request: &Request,
) -> Result<Response<Body>, ConsoleError> {
    if !matches!(request.method().as_str(), "GET" | "POST") {
        return Err(ConsoleError::new(
            405,
            "method_not_allowed",
            "use GET or POST",
        ));
    }
    let token = request
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|p| p.strip_prefix("t="))
        .and_then(UnsubscribeToken::parse)
        .ok_or_else(invalid)?;
    let secret = store.report_secret().await.map_err(store_error)?;
    let subs = store
        .report_subscriptions(&token.site)
        .await
        .map_err(store_error)?;
    let sub = subs
        .into_iter()
        .find(|s| token.names(&s.email) && verify_unsubscribe(&secret, &token, &s.email))
        .filter(|s| s.gets(token.kind))
        .ok_or_else(invalid)?;
    let left = Subscription {
        weekly: sub.weekly && token.kind != Kind::Weekly,
        monthly: sub.monthly && token.kind != Kind::Monthly,
        ..sub.clone()
    };
    if left.weekly || left.monthly {
        store
            .put_report_subscription(&token.site, &left)
            .await
            .map_err(store_error)?;
    } else {
        store
            .delete_report_subscription(&token.site, &sub.email)
            .await
            .map_err(store_error)?;
    }
    tracing::info!(site = %token.site, kind = token.kind.as_str(), "report recipient unsubscribed");
    let html = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Unsubscribed</title></head>\
         <body style=\"font-family:sans-serif;max-width:32em;margin:3em auto\">\
         <h1>Unsubscribed</h1><p>You will no longer get the {} report of {}.</p></body></html>",
        token.kind.as_str(),
        escape_html(&token.site)
    );
    Response::builder()
        .status(200)
        .header("content-type", "text/html; charset=utf-8")
        .body(Body::Text(html))
        .map_err(|_| ConsoleError::new(500, "internal", "response"))
}

fn store_error(e: StoreError) -> ConsoleError {
    tracing::error!(error = %e, "unsubscribe: store failed");
    ConsoleError::new(503, "store_unavailable", "try again later")
}
