//! Shared links and API keys of a site: `GET|POST sites/{site}/shares`,
//! `DELETE sites/{site}/shares/{id}`, the same for `keys`. A link or key
//! is shown once, when made; only its hash is stored, and `DELETE`
//! revokes it (the item stays, marked, as `tally share|key revoke` do).
//!
//! Links are built by core's [`ShareSpec`] as `tally share create` builds
//! them. Keys are made by the signed-in user (its `owner`) with a scope,
//! `read` or `configure`; managing keys needs a person (a key may not mint
//! or revoke keys), and an admin revokes only keys they made (an owner,
//! any).

use crate::audit;
use crate::auth::random;
use crate::body;
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::permit::site_permit;
use crate::site_body::{
    KeyCreated, KeyItem, KeyList, KeyRequest, ShareCreated, ShareItem, ShareList, public_id,
};
use crate::site_store::SiteStore;
use crate::sites::public_origin;
use lambda_http::{Body, Request, Response};
use tally_core::Millis;
use tally_core::account::caps::{self, Capped};
use tally_core::account::{Action, AuditAction, Role};
use tally_core::share::{ShareError, ShareSpec, ShareSpecError};
use tally_store::sites::ApiKeyRecord;

impl From<ShareSpecError> for ConsoleError {
    fn from(e: ShareSpecError) -> Self {
        Self::bad_request(e.code(), e.to_string())
    }
}

impl From<ShareError> for ConsoleError {
    fn from(e: ShareError) -> Self {
        Self::bad_request(e.code(), e.to_string())
    }
}

/// `GET sites/{site}/shares`.
pub async fn shares<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    site_permit(store, request, site, Action::Configure, now).await?;
    let shares = store
        .shares(site)
        .await?
        .iter()
        .map(ShareItem::from)
        .collect();
    Ok(json_response(200, &ShareList { shares }))
}

/// `POST sites/{site}/shares`: a [`ShareSpec`]; answers the link once.
pub async fn add_share<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let spec: ShareSpec = body::parse(request, config.max_body)?;
    if let Some(id) = &spec.segment {
        tally_core::saved_segment::lockable(&store.saved_segments(site).await?, id)?;
    }
    let (share, token) = spec.build(
        site,
        &random()?,
        &random()?,
        Some(config.tag_keys.current()),
        now,
    )?;
    let live = store
        .shares(site)
        .await?
        .iter()
        .filter(|s| s.live(now))
        .count();
    caps::check(Capped::Links, live)?;
    store.put_share(site, &share).await?;
    let item = ShareItem::from(&share);
    let target = format!("share:{}", item.id);
    audit::record(
        store,
        &permit,
        AuditAction::CredentialChanged,
        &target,
        "shared link created",
        now,
    )
    .await?;
    let link = format!(
        "{}/dashboard#share={token}",
        public_origin(config.public_url.as_deref(), request)
    );
    Ok(json_response(
        201,
        &ShareCreated {
            link,
            token,
            share: item,
        },
    ))
}

/// `DELETE sites/{site}/shares/{id}`: revokes it.
pub async fn revoke_share<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    id: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let mut share = store
        .shares(site)
        .await?
        .into_iter()
        .find(|s| public_id(&s.hash) == id && s.revoked_at.is_none())
        .ok_or_else(|| ConsoleError::not_found("share_not_found", "no such live link"))?;
    share.revoked_at = Some(now);
    store.put_share(site, &share).await?;
    let target = format!("share:{id}");
    audit::done(
        store,
        &permit,
        AuditAction::CredentialChanged,
        &target,
        "shared link revoked",
        now,
    )
    .await
}

/// `GET sites/{site}/keys`: people only.
pub async fn keys<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    permit.user()?;
    let members = store.members(site).await?;
    let keys = store
        .api_keys(site)
        .await?
        .iter()
        .map(|k| KeyItem::with_maker(k, &members))
        .collect();
    Ok(json_response(200, &KeyList { keys }))
}

/// `POST sites/{site}/keys {label?, scope?}`: people only; the key is
/// answered once.
pub async fn add_key<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let uid = permit.user()?.user.id.clone();
    let body: KeyRequest = body::parse(request, config.max_body)?;
    let key = tally_core::tag::tagged_credential(
        config.tag_keys.current(),
        tally_core::auth::KEY_PREFIX,
        site,
        &random()?,
    );
    let record = ApiKeyRecord::new(&key, &body.label, Some(uid), body.scope, now)?;
    let live = store
        .api_keys(site)
        .await?
        .iter()
        .filter(|k| k.revoked_at.is_none())
        .count();
    caps::check(Capped::Keys, live)?;
    store.put_api_key(site, &record).await?;
    let item = KeyItem {
        maker: Some(permit.user()?.user.email.clone()),
        ..KeyItem::from(&record)
    };
    let target = format!("key:{}", item.id);
    let detail = format!("API key created ({} scope)", scope_name(&record));
    audit::record(
        store,
        &permit,
        AuditAction::CredentialChanged,
        &target,
        &detail,
        now,
    )
    .await?;
    Ok(json_response(201, &KeyCreated { key, item }))
}

fn scope_name(record: &ApiKeyRecord) -> &'static str {
    match record.scope {
        tally_core::account::KeyScope::Read => "read",
        tally_core::account::KeyScope::Configure => "configure",
        tally_core::account::KeyScope::Write => "write",
    }
}

/// `DELETE sites/{site}/keys/{id}`: revokes it; people only, an admin only
/// their own keys.
pub async fn revoke_key<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    id: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Configure, now).await?;
    let uid = permit.user()?.user.id.clone();
    let mut key = store
        .api_keys(site)
        .await?
        .into_iter()
        .find(|k| public_id(&k.hash) == id && k.revoked_at.is_none())
        .ok_or_else(|| ConsoleError::not_found("key_not_found", "no such live key"))?;
    if permit.role < Role::Owner && key.owner.as_deref() != Some(uid.as_str()) {
        return Err(ConsoleError::forbidden(
            "an admin may revoke only the keys they made",
        ));
    }
    key.revoked_at = Some(now);
    store.put_api_key(site, &key).await?;
    let target = format!("key:{id}");
    audit::done(
        store,
        &permit,
        AuditAction::CredentialChanged,
        &target,
        "API key revoked",
        now,
    )
    .await
}
