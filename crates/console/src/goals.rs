//! Goals and funnels of a site: `GET|POST sites/{site}/goals`,
//! `DELETE sites/{site}/goals/{id}`, the same for `funnels`. Listing is a
//! read; adding and removing configure. Definitions are core's
//! [`GoalSpec`] and [`FunnelSpec`], built and checked against the site's
//! others ([`goal::check_new`], [`funnel::check_new`]) as `tally goal add`
//! and `tally funnel add` do.

use crate::audit;
use crate::body;
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::permit::site_permit;
use crate::site_body::{FunnelList, GoalList};
use crate::site_store::SiteStore;
use lambda_http::{Body, Request, Response};
use tally_core::Millis;
use tally_core::account::{Action, AuditAction};
use tally_core::funnel::{self, FunnelError, FunnelSpec};
use tally_core::goal::{self, GoalError, GoalSpec};

impl From<GoalError> for ConsoleError {
    fn from(e: GoalError) -> Self {
        let status = match e {
            GoalError::Exists(_) | GoalError::TooMany => 409,
            _ => 400,
        };
        Self::new(status, e.code(), e.to_string())
    }
}

impl From<FunnelError> for ConsoleError {
    fn from(e: FunnelError) -> Self {
        let status = match e {
            FunnelError::Exists(_) | FunnelError::TooMany => 409,
            _ => 400,
        };
        Self::new(status, e.code(), e.to_string())
    }
}

/// `GET sites/{site}/goals`.
pub async fn goals<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    site_permit(store, request, site, Action::Read, now).await?;
    let goals = store.goals(site).await?;
    Ok(json_response(200, &GoalList { goals }))
}

/// `POST sites/{site}/goals`: a [`GoalSpec`]; answers the goal as stored.
pub async fn add_goal<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let spec: GoalSpec = body::parse(request, config.max_body)?;
    let goal = spec.build(now)?;
    goal::check_new(&store.goals(site).await?, &goal)?;
    store.put_goal(site, &goal).await?;
    let target = format!("goal:{}", goal.id);
    audit::record(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        "goal added",
        now,
    )
    .await?;
    Ok(json_response(201, &goal))
}

/// `DELETE sites/{site}/goals/{id}`.
pub async fn remove_goal<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    id: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    if !store.goals(site).await?.iter().any(|g| g.id == id) {
        return Err(ConsoleError::not_found("goal_not_found", "no such goal"));
    }
    store.delete_goal(site, id).await?;
    let target = format!("goal:{id}");
    audit::done(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        "goal removed",
        now,
    )
    .await
}

/// `GET sites/{site}/funnels`.
pub async fn funnels<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    site_permit(store, request, site, Action::Read, now).await?;
    let funnels = store.funnels(site).await?;
    Ok(json_response(200, &FunnelList { funnels }))
}

/// `POST sites/{site}/funnels`: a [`FunnelSpec`]; answers the funnel as
/// stored.
pub async fn add_funnel<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let spec: FunnelSpec = body::parse(request, config.max_body)?;
    let funnel = spec.build(now)?;
    funnel::check_new(&store.funnels(site).await?, &funnel)?;
    store.put_funnel(site, &funnel).await?;
    let target = format!("funnel:{}", funnel.id);
    audit::record(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        "funnel added",
        now,
    )
    .await?;
    Ok(json_response(201, &funnel))
}

/// `DELETE sites/{site}/funnels/{id}`.
pub async fn remove_funnel<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    id: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    if !store.funnels(site).await?.iter().any(|f| f.id == id) {
        return Err(ConsoleError::not_found(
            "funnel_not_found",
            "no such funnel",
        ));
    }
    store.delete_funnel(site, id).await?;
    let target = format!("funnel:{id}");
    audit::done(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        "funnel removed",
        now,
    )
    .await
}
