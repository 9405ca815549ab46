//! A site's trusted proxy (issue 29): `GET|POST sites/{site}/proxy`. Both
//! configure (admins, owners, `configure` keys): the secret lets its
//! holder speak for any visitor of the site.
//!
//! A change is core's [`ProxyChange`] applied to the stored proxy
//! ([`ProxyChange::apply`], the function `tally site proxy` calls): a
//! secret made from the system's randomness when the first one is made or
//! `rotate` asks, shown in that answer only (the site keeps its SHA-256);
//! networks (CIDR, or `cloudflare`) checked and canonical. The audit entry
//! says what changed, never the secret. Ingest reads the same site item.

use crate::audit;
use crate::body;
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::permit::site_permit;
use crate::site_store::SiteStore;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use tally_core::Millis;
use tally_core::account::{Action, AuditAction};
use tally_core::ingest::proxy::{Proxy, ProxyChange, ProxyError, SECRET_HEADER};

impl From<ProxyError> for ConsoleError {
    fn from(e: ProxyError) -> Self {
        Self::bad_request(e.code(), e.to_string())
    }
}

/// A site's proxy as the console shows it: never a secret but the one
/// just made.
#[derive(Debug, Serialize)]
pub struct ProxyView {
    /// Whether requests with the secret are counted as the visitor they
    /// forward.
    pub enabled: bool,
    /// The header the proxy sends the secret in.
    pub header: &'static str,
    /// The networks the proxy must send from (empty: any).
    pub networks: Vec<String>,
    /// Until when the rotated-out secret is still accepted (`None`: none
    /// is).
    pub previous_valid_until: Option<Millis>,
    /// The secret made by this change, shown once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl ProxyView {
    fn of(proxy: Option<&Proxy>, secret: Option<String>, now: Millis) -> Self {
        Self {
            enabled: proxy.is_some(),
            header: SECRET_HEADER,
            networks: proxy.map(|p| p.networks.clone()).unwrap_or_default(),
            previous_valid_until: proxy
                .filter(|p| p.previous_hash.is_some() && p.previous_until > now)
                .map(|p| p.previous_until),
            secret,
        }
    }
}

/// `GET sites/{site}/proxy`.
pub async fn get<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    Ok(json_response(
        200,
        &ProxyView::of(permit.site.proxy.as_ref(), None, now),
    ))
}

/// `POST sites/{site}/proxy`: a [`ProxyChange`] (`rotate`, `networks`,
/// `remove`); answers the proxy as stored, with the secret when one was
/// made.
pub async fn change<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let change: ProxyChange = body::parse(request, config.max_body)?;
    let fresh = tally_core::ingest::proxy::new_secret(&crate::auth::random::<24>()?);
    let before = permit.site.proxy.clone();
    let (site_now, made) = crate::sites::write_change(store, permit.site.clone(), |s| {
        let applied = change.apply(s.proxy.as_ref(), &fresh, now)?;
        s.proxy = applied.proxy;
        Ok(Some(applied.secret))
    })
    .await?;
    let secret = made.flatten();
    let detail = detail(before.as_ref(), site_now.proxy.as_ref(), secret.is_some());
    audit::record(
        store,
        &permit,
        AuditAction::SiteChanged,
        "proxy",
        &detail,
        now,
    )
    .await?;
    Ok(json_response(
        200,
        &ProxyView::of(site_now.proxy.as_ref(), secret, now),
    ))
}

/// What a change did, for the audit log: never the secret.
fn detail(before: Option<&Proxy>, after: Option<&Proxy>, made: bool) -> String {
    match (before, after) {
        (_, None) => "proxy removed".to_owned(),
        (None, Some(p)) => format!("proxy trusted ({} networks)", p.networks.len()),
        (Some(b), Some(a)) => {
            let mut parts = Vec::new();
            if made {
                parts.push("secret rotated".to_owned());
            }
            if a.networks != b.networks {
                parts.push(format!("{} networks", a.networks.len()));
            }
            if parts.is_empty() {
                "proxy unchanged".to_owned()
            } else {
                parts.join(", ")
            }
        }
    }
}
