//! The one place a site route's caller is let in or turned away: every
//! `sites/{site}/…` route asks [`site_permit`] for the [`Action`] it does,
//! and the answer comes from core's matrix ([`Role::allows`],
//! [`KeyScope::allows`]) and nowhere else.
//!
//! A caller is either a signed-in user (the session cookie, its CSRF and
//! origin checked by [`auth::signed_in`] for a state-changing method) or an
//! API key of the site (`Authorization: Bearer tk_…`; no ambient
//! credential, so no CSRF check). An instance owner acts as the owner of
//! every site. Not signed in: 401; signed in without the role, a key
//! without the scope, a key of another site: 403 `forbidden`. A route
//! only people may use (managing keys, accepting invites) also refuses
//! keys ([`Permit::user`]). Instance-wide actions (creating sites,
//! instance settings, password reset links for anyone) are let in by
//! [`instance_permit`].

use crate::auth::{self, Signed};
use crate::error::ConsoleError;
use crate::site_store::SiteStore;
use lambda_http::Request;
use tally_core::Millis;
use tally_core::account::auth as keys;
use tally_core::account::role::{InstanceAction, instance_allows, site_role};
use tally_core::account::{Action, KeyScope, Role};
use tally_core::ingest::site::Site;
use tally_store::sites::ApiKeyRecord;

/// Who is asking.
#[derive(Debug, Clone)]
pub enum Actor {
    /// A signed-in user.
    User(Box<Signed>),
    /// An API key of the site.
    Key(ApiKeyRecord),
}

impl Actor {
    /// The actor as audit entries name it: the user id and email, or
    /// `key:{shown prefix}` and no email.
    pub fn audit_name(&self) -> (String, String) {
        match self {
            Self::User(signed) => (signed.user.id.clone(), signed.user.email.clone()),
            Self::Key(record) => (format!("key:{}", record.prefix), String::new()),
        }
    }
}

/// A caller let into a site for an action.
#[derive(Debug, Clone)]
pub struct Permit {
    /// Who.
    pub actor: Actor,
    /// The role they act with (a key: admin for `configure`, viewer for
    /// `read`).
    pub role: Role,
    /// The site, as read for this request.
    pub site: Site,
}

impl Permit {
    /// The signed-in user, or 403 for a key (routes only people use).
    pub fn user(&self) -> Result<&Signed, ConsoleError> {
        match &self.actor {
            Actor::User(signed) => Ok(signed),
            Actor::Key(_) => Err(ConsoleError::forbidden(
                "API keys cannot use this route: sign in",
            )),
        }
    }
}

/// Lets a signed-in user do an instance-wide action (core's
/// [`instance_allows`]: the instance owner's), or 403 `forbidden` saying
/// `refusal`.
pub fn instance_permit(
    signed: &Signed,
    action: InstanceAction,
    refusal: &str,
) -> Result<(), ConsoleError> {
    if instance_allows(signed.user.instance_owner, action) {
        Ok(())
    } else {
        Err(ConsoleError::forbidden(refusal))
    }
}

/// The signed-in user of a request: 401 without a live session, 403
/// `totp_required` while the instance requires 2FA they have not set up.
pub async fn signed_user<S: SiteStore>(
    store: &S,
    request: &Request,
    now: Millis,
) -> Result<Signed, ConsoleError> {
    let signed = auth::signed_in(store, request, now).await?;
    if signed.must_enable_totp() {
        return Err(ConsoleError::totp_required());
    }
    Ok(signed)
}

/// Lets the caller into `site_id` for `action`, or says why not (401, 403,
/// then 404 for a site that does not exist, so a non-member learns nothing
/// about which sites exist).
pub async fn site_permit<S: SiteStore>(
    store: &S,
    request: &Request,
    site_id: &str,
    action: Action,
    now: Millis,
) -> Result<Permit, ConsoleError> {
    let (actor, role) = match auth::header(request, "authorization") {
        Some(header) => {
            let mut record = key_of(store, header, site_id).await?;
            record.scope = maker_cap(store, &record, site_id).await?;
            let role = if record.scope.allows(Action::Configure) {
                Role::Admin
            } else {
                Role::Viewer
            };
            if !record.scope.allows(action) {
                return Err(ConsoleError::forbidden(
                    "this API key's scope does not allow that",
                ));
            }
            (Actor::Key(record), role)
        }
        None => {
            let signed = signed_user(store, request, now).await?;
            let membership = if signed.user.instance_owner {
                None
            } else {
                store
                    .membership(site_id, &signed.user.id)
                    .await?
                    .map(|m| m.role)
            };
            let role = site_role(signed.user.instance_owner, membership)
                .ok_or_else(|| ConsoleError::forbidden("you are not a member of this site"))?;
            if !role.allows(action) {
                return Err(ConsoleError::forbidden(format!(
                    "a site {} may not do that",
                    role.as_str()
                )));
            }
            (Actor::User(Box::new(signed)), role)
        }
    };
    let site = store
        .site(site_id)
        .await?
        .ok_or_else(|| ConsoleError::not_found("site_not_found", "no such site"))?;
    Ok(Permit { actor, role, site })
}

/// A key's scope as its maker may act today ([`KeyScope::capped_by`]):
/// a removed maker's key is 401 like a revoked one, a viewer's reads.
async fn maker_cap<S: SiteStore>(
    store: &S,
    record: &ApiKeyRecord,
    site_id: &str,
) -> Result<KeyScope, ConsoleError> {
    let Some(uid) = record.owner.as_deref() else {
        return Ok(record.scope);
    };
    let instance_owner = store.user(uid).await?.is_some_and(|u| u.instance_owner);
    let membership = if instance_owner {
        None
    } else {
        store.membership(site_id, uid).await?.map(|m| m.role)
    };
    record
        .scope
        .capped_by(site_role(instance_owner, membership))
        .ok_or_else(|| ConsoleError::new(401, "invalid_api_key", "invalid or revoked API key"))
}

/// The live key record of a bearer header for `site_id`: 401 for a
/// malformed, unknown or revoked key, 403 for another site's key.
async fn key_of<S: SiteStore>(
    store: &S,
    header: &str,
    site_id: &str,
) -> Result<ApiKeyRecord, ConsoleError> {
    let invalid = || ConsoleError::new(401, "invalid_api_key", "invalid or revoked API key");
    let key = keys::bearer(Some(header))
        .map_err(|e| ConsoleError::new(e.status(), e.code(), e.to_string()))?;
    let key_site = keys::key_site(key).ok_or_else(invalid)?;
    let hash = keys::hash_key(key);
    if key_site != site_id {
        // Another site's key: 403 only if it is a real key of that site.
        return match store.api_key(key_site, &hash).await? {
            Some(r) if r.revoked_at.is_none() => Err(ConsoleError::forbidden(
                "this API key does not grant access to this site",
            )),
            _ => Err(invalid()),
        };
    }
    store
        .api_key(site_id, &hash)
        .await?
        .filter(|r| {
            r.revoked_at.is_none()
                && tally_core::ingest::salt::constant_time_eq(r.hash.as_bytes(), hash.as_bytes())
        })
        .ok_or_else(invalid)
}
