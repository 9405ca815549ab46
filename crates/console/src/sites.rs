//! Sites: `GET sites` (the caller's, with their role; an instance owner's:
//! all), `POST sites` (instance owners; the creator becomes an owner
//! member), `GET|PATCH|DELETE sites/{site}`, `GET sites/{site}/snippet`
//! and `GET sites/{site}/first-pageview`.
//!
//! A site is built and changed by core's [`new_site`] and [`SiteChange`],
//! the functions `tally site create|update` call, so both doors write the
//! same item; a change is written only if the site's shard plan did not
//! change meanwhile (read again and retried, as the CLI does).

use crate::audit;
use crate::body;
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::permit::{Actor, instance_permit, signed_user, site_permit};
use crate::site_body::{
    CreateSiteRequest, DeletionBody, SeenBody, SiteBody, SiteList, SnippetBody,
};
use crate::site_store::SiteStore;
use lambda_http::{Body, Request, Response};
use tally_core::account::role::InstanceAction;
use tally_core::account::{Action, AuditAction, Membership, Role};
use tally_core::ingest::site::{Site, SiteChange, SiteError, new_site, snippet};
use tally_core::product::deletion::Deletion;
use tally_core::{HOUR_MS, Millis};
use tally_store::accounts::AuditLog;

/// Hours `first-pageview` looks back over (the current one included): one
/// bounded Query per hour and shard.
pub const FIRST_PAGEVIEW_HOURS: u32 = 3;

/// Tries of a change that lost to a shard-plan change.
const UPDATE_TRIES: usize = 5;

impl From<SiteError> for ConsoleError {
    fn from(e: SiteError) -> Self {
        let code = match e {
            SiteError::InvalidId => "invalid_site_id",
            SiteError::InvalidDomain(_) | SiteError::NoDomain => "invalid_domain",
            SiteError::InvalidTimeZone(_) => "invalid_timezone",
            SiteError::InvalidRetention => "invalid_retention",
            SiteError::InvalidHistory => "invalid_history",
            SiteError::InvalidNetwork(_) => "invalid_network",
            SiteError::InvalidPath(_) => "invalid_path",
            SiteError::TooManyExclusions => "too_many_exclusions",
        };
        Self::bad_request(code, e.to_string())
    }
}

/// The origin links are made of: `PUBLIC_URL`, else the request's own
/// (`http` for a loopback host, as `tally dev` serves).
pub fn public_origin(configured: Option<&str>, request: &Request) -> String {
    if let Some(url) = configured {
        return url.trim_end_matches('/').to_owned();
    }
    let host = crate::auth::header(request, "host").unwrap_or("localhost");
    let loopback = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .any(|h| host == *h || host.starts_with(&format!("{h}:")));
    // Only the two schemes a link can have: anything else a client wrote
    // in the header is ignored.
    let scheme = crate::auth::header(request, "x-forwarded-proto")
        .map(str::trim)
        .filter(|p| matches!(*p, "http" | "https"))
        .unwrap_or(if loopback { "http" } else { "https" });
    format!("{scheme}://{host}")
}

/// `GET sites`.
pub async fn list<S: SiteStore>(
    store: &S,
    request: &Request,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let signed = signed_user(store, request, now).await?;
    let sites = if signed.user.instance_owner {
        store
            .sites()
            .await?
            .iter()
            .map(|s| SiteBody::of(s, Role::Owner))
            .collect()
    } else {
        let mut sites = Vec::new();
        for (id, role) in store.user_sites(&signed.user.id).await? {
            if let Some(site) = store.site(&id).await? {
                sites.push(SiteBody::of(&site, role));
            }
        }
        sites
    };
    // Deletions under way: every one to the instance owner, to others
    // those they asked for.
    let deleting = store
        .deletions()
        .await?
        .iter()
        .filter(|d| signed.user.instance_owner || d.by == signed.user.id)
        .map(|d| DeletionBody::of(d, now))
        .collect();
    Ok(json_response(200, &SiteList { sites, deleting }))
}

/// `POST sites`: instance owners only.
pub async fn create<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let signed = signed_user(store, request, now).await?;
    instance_permit(
        &signed,
        InstanceAction::CreateSite,
        "only the instance owner may create sites",
    )?;
    let body: CreateSiteRequest = body::parse(request, config.max_body)?;
    let settings = SiteChange {
        domains: None,
        timezone: None,
        exclude_networks: body.exclude_networks,
        exclude_paths: body.exclude_paths,
        retention_days: body.retention_days,
        history_days: body.history_days,
    };
    let site = new_site(
        body.id.as_deref(),
        &body.domains,
        body.timezone.as_deref().unwrap_or("UTC"),
        &settings,
        now,
    )?;
    if store.site(&site.id).await?.is_some() {
        return Err(ConsoleError::new(
            409,
            "site_exists",
            "a site with this id exists",
        ));
    }
    if store.deletion(&site.id).await?.is_some() {
        return Err(ConsoleError::new(
            409,
            "site_deleting",
            "a site with this id is still being deleted; the id is free once every item of it is gone",
        ));
    }
    store.create_site(&site).await?;
    store
        .put_membership(&Membership {
            site: site.id.clone(),
            uid: signed.user.id.clone(),
            role: Role::Owner,
            email: signed.user.email.clone(),
        })
        .await?;
    let actor = (signed.user.id.clone(), signed.user.email.clone());
    for log in [AuditLog::Instance, AuditLog::Site(site.id.clone())] {
        audit::append(
            store,
            &log,
            actor.clone(),
            AuditAction::SiteChanged,
            &site.id,
            "site created",
            now,
        )
        .await?;
    }
    tracing::info!(event = "site_created", site = %site.id, "site created");
    Ok(json_response(201, &SiteBody::of(&site, Role::Owner)))
}

/// `GET sites/{site}`.
pub async fn get<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Read, now).await?;
    Ok(json_response(200, &SiteBody::of(&permit.site, permit.role)))
}

/// `PATCH sites/{site}`: a [`SiteChange`].
pub async fn update<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let change: SiteChange = body::parse(request, config.max_body)?;
    let (current, changed) = write_change(store, permit.site.clone(), |s| {
        let changed = change.apply(s)?;
        Ok((!changed.is_empty()).then_some(changed))
    })
    .await?;
    if let Some(changed) = changed {
        let detail = format!("changed {}", changed.join(", "));
        audit::record(store, &permit, AuditAction::SiteChanged, site, &detail, now).await?;
    }
    Ok(json_response(200, &SiteBody::of(&current, permit.role)))
}

/// Writes a change of a site's settings: `change` is applied to the site
/// as read and answers what it changed (`None`: nothing, nothing is
/// written); when the shard plan moved under it (ingest or the job
/// resharded), the site is read again and the change applied anew, at
/// most [`UPDATE_TRIES`] times, then 409 `site_busy`. Answers the site as
/// stored and what changed.
pub(crate) async fn write_change<S: SiteStore, T>(
    store: &S,
    mut current: Site,
    mut change: impl FnMut(&mut Site) -> Result<Option<T>, ConsoleError>,
) -> Result<(Site, Option<T>), ConsoleError> {
    for _ in 0..UPDATE_TRIES {
        let Some(changed) = change(&mut current)? else {
            return Ok((current, None));
        };
        if store.update_site(&current).await? {
            return Ok((current, Some(changed)));
        }
        current = store
            .site(&current.id)
            .await?
            .ok_or_else(|| ConsoleError::not_found("site_not_found", "no such site"))?;
    }
    Err(ConsoleError::new(
        409,
        "site_busy",
        "the site keeps changing; try again",
    ))
}

/// `DELETE sites/{site}`: owners only. At once its keys and shared links
/// are revoked, its members and invites removed, and the site item gives
/// way to its deletion record (ingest refuses its events once caches
/// expire, and the id cannot be taken); the job then removes every item
/// under the site's partitions ([`tally_core::product::deletion`]). `202` with where
/// the deletion stands; `GET sites` lists it until it is done.
pub async fn delete<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::DeleteSite, now).await?;
    let by = permit.user()?.user.id.clone();
    for mut key in store.api_keys(site).await? {
        if key.revoked_at.is_none() {
            key.revoked_at = Some(now);
            store.put_api_key(site, &key).await?;
        }
    }
    for mut share in store.shares(site).await? {
        if share.revoked_at.is_none() {
            share.revoked_at = Some(now);
            store.put_share(site, &share).await?;
        }
    }
    for invite in store.invites(site).await? {
        store.delete_invite(site, &invite.hash).await?;
    }
    for member in store.members(site).await? {
        store.delete_membership(site, &member.uid).await?;
    }
    let deletion = Deletion::new(permit.site.clone(), &by, now);
    if !store.begin_deletion(&deletion).await? {
        return Err(ConsoleError::not_found("site_not_found", "no such site"));
    }
    // The site's own log is swept with the rest: the instance log keeps
    // the record of the deletion.
    let actor = permit.actor.audit_name();
    for log in [AuditLog::Instance, AuditLog::Site(site.to_owned())] {
        audit::append(
            store,
            &log,
            actor.clone(),
            AuditAction::SiteChanged,
            site,
            "site deleted",
            now,
        )
        .await?;
    }
    tracing::info!(event = "site_deleted", site, "site deleted");
    Ok(json_response(202, &DeletionBody::of(&deletion, now)))
}

/// `GET sites/{site}/snippet`.
pub async fn snippet_of<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Read, now).await?;
    let ingest_url = public_origin(config.ingest_url.as_deref(), request);
    Ok(json_response(
        200,
        &SnippetBody {
            snippet: snippet(&permit.site.id, &ingest_url),
            ingest_url,
        },
    ))
}

/// `GET sites/{site}/first-pageview`: whether any event arrived in the
/// last [`FIRST_PAGEVIEW_HOURS`] hours.
pub async fn first_pageview<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Read, now).await?;
    let this_hour = tally_core::keys::hour_start(now);
    let hours = (0..i64::from(FIRST_PAGEVIEW_HOURS))
        .map(|i| this_hour - i * HOUR_MS)
        .collect();
    let seen = store.any_event_in_hours(&permit.site, hours, now).await?;
    Ok(json_response(
        200,
        &SeenBody {
            seen,
            hours: FIRST_PAGEVIEW_HOURS,
        },
    ))
}

/// Whether the permit's caller is this user (a key never is).
pub fn is_user(actor: &Actor, uid: &str) -> bool {
    matches!(actor, Actor::User(signed) if signed.user.id == uid)
}
