//! A site's affiliates: `GET|POST sites/{site}/affiliates`,
//! `DELETE sites/{site}/affiliates/{slug}`. Listing is a read (as goals:
//! the terms are no one's personal data); adding and removing configure.
//! An affiliate is core's [`AffiliateSpec`] built as `tally affiliate add`
//! builds it (slug, `rate` or `fixed`, currency) and stored once per slug
//! (409 `affiliate_exists`). Removing one leaves the conversions already
//! attributed to it as stored: each keeps its slug and the commission
//! fixed when it was recorded; a new conversion naming the slug is then
//! refused (400 `unknown_affiliate`) until it is defined again.

use crate::audit;
use crate::body;
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::permit::site_permit;
use crate::site_store::SiteStore;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use tally_core::Millis;
use tally_core::account::caps::{self, Capped};
use tally_core::account::{Action, AuditAction};
use tally_core::conversion::{self, Affiliate, AffiliateSpec, ConversionError};

impl From<ConversionError> for ConsoleError {
    fn from(e: ConversionError) -> Self {
        Self::new(400, e.code(), e.to_string())
    }
}

/// `GET sites/{site}/affiliates`.
#[derive(Debug, Serialize)]
pub struct AffiliateList {
    /// Affiliates in slug order, as stored.
    pub affiliates: Vec<Affiliate>,
}

/// `GET sites/{site}/affiliates`.
pub async fn list<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    site_permit(store, request, site, Action::Read, now).await?;
    let affiliates = store.affiliates(site).await?;
    Ok(json_response(200, &AffiliateList { affiliates }))
}

/// `POST sites/{site}/affiliates`: an [`AffiliateSpec`]; answers the
/// affiliate as stored.
pub async fn add<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let spec: AffiliateSpec = body::parse(request, config.max_body)?;
    let affiliate = spec.build(now)?;
    caps::check(Capped::Affiliates, store.affiliates(site).await?.len())?;
    if !store.create_affiliate(site, &affiliate).await? {
        return Err(ConsoleError::new(
            409,
            "affiliate_exists",
            format!("this site already has an affiliate {:?}", affiliate.slug),
        ));
    }
    let target = format!("affiliate:{}", affiliate.slug);
    audit::record(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        "affiliate added",
        now,
    )
    .await?;
    Ok(json_response(201, &affiliate))
}

/// `DELETE sites/{site}/affiliates/{slug}`.
pub async fn remove<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    slug: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let missing = || ConsoleError::not_found("affiliate_not_found", "no such affiliate");
    let slug = conversion::check_slug(slug).map_err(|_| missing())?;
    if !store.delete_affiliate(site, &slug).await? {
        return Err(missing());
    }
    let target = format!("affiliate:{slug}");
    audit::done(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        "affiliate removed",
        now,
    )
    .await
}
