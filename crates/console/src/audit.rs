//! The audit log of a site's configuration: every change a site route
//! makes is recorded after it is made ([`record`]: who, what, on what,
//! when, never a secret), and owners read the log newest first, a bounded
//! page at a time (`GET sites/{site}/audit?limit=&before=`, `before` the
//! `next` of the page before: `{millis}-{nonce}`). What is done to the
//! instance or to a user's own account goes to the instance's log
//! ([`instance`]).

use crate::body::Done;
use crate::error::{ConsoleError, json_response};
use crate::permit::{Permit, site_permit};
use crate::site_body::AuditBody;
use crate::site_store::SiteStore;
use crate::store::ConsoleStore;
use lambda_http::{Body, Request, Response};
use tally_core::account::{Action, AuditAction, AuditEntry, User};
use tally_core::{Millis, keys};
use tally_store::accounts::{AuditLog, MAX_AUDIT_PAGE};

/// Entries a page holds unless `limit` says fewer.
pub const DEFAULT_PAGE: usize = 50;

/// Appends an entry to `log` by `actor` (user id or `key:…`, email).
pub async fn append<S: ConsoleStore>(
    store: &S,
    log: &AuditLog,
    actor: (String, String),
    action: AuditAction,
    target: &str,
    detail: &str,
    now: Millis,
) -> Result<(), ConsoleError> {
    let entry = AuditEntry {
        at: now,
        nonce: tally_core::hex::encode(&crate::auth::random::<3>()?),
        actor: actor.0,
        actor_email: actor.1,
        action,
        target: target.to_owned(),
        detail: detail.to_owned(),
    };
    store.put_audit(log, &entry).await?;
    Ok(())
}

/// Appends an entry to the instance's log by a user (setup, instance
/// settings, their 2FA, passwords).
pub async fn instance<S: ConsoleStore>(
    store: &S,
    actor: &User,
    action: AuditAction,
    target: &str,
    detail: &str,
    now: Millis,
) -> Result<(), ConsoleError> {
    let actor = (actor.id.clone(), actor.email.clone());
    append(
        store,
        &AuditLog::Instance,
        actor,
        action,
        target,
        detail,
        now,
    )
    .await
}

/// Records a change the permit's caller made to its site.
pub async fn record<S: SiteStore>(
    store: &S,
    permit: &Permit,
    action: AuditAction,
    target: &str,
    detail: &str,
    now: Millis,
) -> Result<(), ConsoleError> {
    let log = AuditLog::Site(permit.site.id.clone());
    append(
        store,
        &log,
        permit.actor.audit_name(),
        action,
        target,
        detail,
        now,
    )
    .await?;
    tracing::info!(event = "site_changed", site = %permit.site.id, action = ?action, target, "audited");
    Ok(())
}

/// Records a change the permit's caller made to its site (a removal, a
/// revocation) and answers `{ok: true}`.
pub async fn done<S: SiteStore>(
    store: &S,
    permit: &Permit,
    action: AuditAction,
    target: &str,
    detail: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    record(store, permit, action, target, detail, now).await?;
    Ok(json_response(200, &Done { ok: true }))
}

/// `GET sites/{site}/audit`: owners only.
pub async fn list<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::ReadAudit, now).await?;
    let param = |name: &str| crate::body::query_param(request, name);
    let limit = param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(DEFAULT_PAGE)
        .clamp(1, MAX_AUDIT_PAGE);
    // The cursor is `{millis}-{nonce}`: no `#` to escape in a URL.
    let before = param("before").and_then(|c| {
        let (at, nonce) = c.split_once('-')?;
        let at = at.parse::<Millis>().ok()?;
        let hex = nonce.len() == 6 && nonce.bytes().all(|b| b.is_ascii_hexdigit());
        hex.then(|| keys::audit_sk(at, nonce))
    });
    let (entries, next) = store
        .audit(
            &AuditLog::Site(permit.site.id.clone()),
            limit,
            before.as_deref(),
        )
        .await?;
    let next = next
        .as_deref()
        .and_then(keys::parse_audit_sk)
        .map(|(at, nonce)| format!("{at}-{nonce}"));
    Ok(json_response(200, &AuditBody { entries, next }))
}
