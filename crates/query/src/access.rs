//! Access: who reads a site's reports. An API key, a shared link
//! (read-only, narrowed by its filter, maybe behind a password), or a
//! signed-in member (the console's `tally_session` cookie); the
//! failed-guess guard and the attempt counters around every check
//! (`Config::guard`, the link's counter in the table); `POST …/unlock`,
//! which trades a link's password for a session; `GET …/access`, what the
//! credential allows.
//!
//! # Members
//!
//! A request without `Authorization` that carries `tally_session` is
//! checked as the console checks it (`tally_core::account::signin`): the
//! stored session answers the token, before its absolute end (14 days)
//! and used in the last 3 days; the user exists; an instance that
//! requires 2FA refuses a user without it (403 `totp_required`). Then the
//! user reads a site they are a member of, with any role (every role
//! reads), or any site as the instance owner; another site is 403
//! `forbidden` whether it exists or not. Not signed in: 401
//! `not_signed_in`.
//!
//! The query function is read-only: it never writes a session's
//! `last_seen`. The idle expiry therefore counts from the console's last
//! touch (the console writes `last_seen` at most every 10 minutes of its
//! own use): a browser that only reads reports for 3 days without opening
//! a console page is signed out. The cookie is read on GET routes only
//! (`SameSite=Strict`, no CORS, nothing changes), so no CSRF token is
//! asked; Plausible's Stats API and `POST …/unlock` take no cookie.

use crate::config::{Config, SHARE_LINK_REQUESTS_PER_MINUTE, SHARE_REQUESTS_PER_MINUTE, ShareRead};
use crate::error::{ApiError, json_response};
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tally_core::Millis;
use tally_core::account::auth::{self, AuthError};
use tally_core::account::share::{self, Share, ShareError};
use tally_core::account::signin::{self, Claim};
use tally_core::account::tag::TagVerdict;
use tally_core::account::{KeyScope, Role, User};
use tally_core::ingest::salt;
use tally_core::ingest::site::Site;
use tally_core::keys::valid_site_id;

/// Who reads: the holder of an API key, of a shared link (read-only
/// reports of one site, narrowed by the link's filter), or a signed-in
/// member of the site.
#[derive(Debug, Clone)]
pub(crate) enum Access {
    /// An API key, with its scope (a `write` key also records trusted
    /// conversions).
    Key(KeyScope),
    /// A shared link.
    Share(Share),
    /// A signed-in user with a role on the site (an instance owner's is
    /// `owner`).
    Member {
        /// Their role.
        role: Role,
        /// Their user id (whose personal segments and annotations they
        /// see).
        uid: String,
    },
}

/// Which credentials an endpoint takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readers {
    /// API keys only (Plausible's Stats API).
    Keys,
    /// API keys, shared links and signed-in members (Tally's reports and
    /// dashboard).
    Everyone,
}

/// Header carrying a password-protected link's session ([`share::session`]).
pub const SESSION_HEADER: &str = "x-tally-session";

/// `GET …/access`: what the credential allows, for the dashboard.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum AccessBody<'a> {
    /// An API key.
    Key {
        /// The site id.
        site: &'a str,
        /// `key`.
        access: &'static str,
    },
    /// A shared link.
    Share {
        /// The site id.
        site: &'a str,
        /// `share`.
        access: &'static str,
        /// The link's label.
        label: &'a str,
        /// The link's filter.
        filter: &'a str,
        /// When it expires, if it does.
        expires_at: Option<Millis>,
        /// Whether it has a password.
        password: bool,
        /// The saved segment it is locked to, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        segment: Option<&'a str>,
    },
    /// A signed-in member.
    Member {
        /// The site id.
        site: &'a str,
        /// `member`.
        access: &'static str,
        /// Their role on the site.
        role: Role,
    },
}

impl<'a> AccessBody<'a> {
    /// What `access` grants on `site`.
    pub(crate) fn of(site: &'a Site, access: &'a Access) -> Self {
        match access {
            Access::Key(_) => Self::Key {
                site: &site.id,
                access: "key",
            },
            Access::Share(share) => Self::Share {
                site: &site.id,
                access: "share",
                label: &share.label,
                filter: &share.filter,
                expires_at: share.expires_at,
                password: share.password.is_some(),
                segment: share.segment.as_deref(),
            },
            Access::Member { role, .. } => Self::Member {
                site: &site.id,
                access: "member",
                role: *role,
            },
        }
    }
}

/// `GET …/access`, as JSON (a file format is refused: it has no rows).
pub(crate) fn describe(
    request: &Request,
    site: &Site,
    access: &Access,
) -> Result<Response<Body>, ApiError> {
    let format = crate::download::requested_format(request)?;
    let body = AccessBody::of(site, access);
    crate::download::respond_rows(&body, None, format, &site.id, "access")
}

/// What `POST …/unlock` takes.
#[derive(Debug, Deserialize)]
struct UnlockRequest {
    password: String,
}

/// What `POST …/unlock` answers: the session and the header to send it in.
#[derive(Debug, Clone, Serialize)]
pub struct UnlockBody {
    /// The session.
    pub session: String,
    /// When it ends.
    pub expires_at: Millis,
    /// The header that carries it ([`SESSION_HEADER`]).
    pub header: &'static str,
}

/// `POST /api/sites/{site}/unlock` with the link as bearer token and
/// `{"password": "…"}`: a session for a password-protected link. Each
/// attempt is taken before the password is checked, from the client
/// network's guard and from the link's own counter in the table (shared by
/// every instance), and given back when the password is right; a wrong
/// one keeps both.
pub(crate) async fn unlock<S: QueryStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site_id: &str,
    now: i64,
) -> Result<Response<Body>, ApiError> {
    let ip = tally_lambda::request::client_ip(request, false);
    if !config
        .guard
        .attempt(&ip, config.auth_failures_per_minute, now)
    {
        return Err(too_many_attempts());
    }
    let result = async {
        let body: &[u8] = request.body().as_ref();
        let password = serde_json::from_slice::<UnlockRequest>(body)
            .map(|u| u.password)
            .map_err(|_| ApiError::bad_request("invalid_payload", "send {\"password\": \"…\"}"))?;
        let header = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        let token = auth::bearer(header)?;
        let found = find_share(store, site_id, token).await?;
        // Revoked or expired links say so before any password is tried.
        match share::check(&found, None, now) {
            Err(e) if e != ShareError::PasswordRequired => return Err(e.into()),
            _ => {}
        }
        let Some(hash) = found.password.clone() else {
            return Err(ApiError::bad_request(
                "no_password",
                "this shared link has no password: open it directly",
            ));
        };
        let limit = config.share_password_attempts_per_minute;
        if !store
            .share_attempt(site_id, &found.hash, now, limit)
            .await?
        {
            return Err(ApiError {
                status: 429,
                code: "too_many_attempts",
                message: format!(
                    "this shared link was tried with {limit} wrong passwords this minute; retry in a minute"
                ),
            });
        }
        // PBKDF2 takes tens of milliseconds: off the async workers.
        let right = tokio::task::spawn_blocking(move || hash.verify(&password))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "password check failed");
                ApiError::internal()
            })?;
        if !right {
            return Err(ShareError::WrongPassword.into());
        }
        if let Err(e) = store
            .give_back_share_attempt(site_id, &found.hash, now)
            .await
        {
            // The session is still given: the attempt stays counted until the
            // minute ends.
            tracing::warn!(error = %e, "a password attempt was not given back");
        }
        let (session, expires_at) = share::session(&found, now).ok_or(ShareError::Invalid)?;
        Ok(json_response(
            200,
            &UnlockBody {
                session,
                expires_at,
                header: SESSION_HEADER,
            },
        ))
    }
    .await;
    if !result.as_ref().is_err_and(is_guess) {
        config.guard.passed(&ip, now);
    }
    result
}

fn too_many_attempts() -> ApiError {
    ApiError {
        status: 429,
        code: "too_many_attempts",
        message: "too many failed key checks from this network, retry in a minute".into(),
    }
}

/// Whether a failed check was a guess that counts against the client's
/// network: an unknown, malformed or foreign credential, a wrong password,
/// or a password tried at a link already locked for the minute; not a
/// link that wants its password or has expired.
fn is_guess(e: &ApiError) -> bool {
    match e.status {
        401 | 403 => {
            e.code != ShareError::PasswordRequired.code()
                && e.code != ShareError::Expired.code()
                && e.code != TOTP_REQUIRED
        }
        429 => e.code == "too_many_attempts",
        _ => false,
    }
}

/// The failed-guess guard, then the credential check: the site and who
/// reads, or the error. The check is taken from the client network's
/// guard before it is made and given back unless it was a failed guess.
pub(crate) async fn authenticate<S: QueryStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: i64,
    readers: Readers,
) -> Result<(Arc<Site>, Access), ApiError> {
    // Without `Authorization`, the session cookie (where members read).
    let session = match readers {
        Readers::Everyone if !request.headers().contains_key("authorization") => {
            session_claim(request, config, now)
        }
        _ => None,
    };
    let (claim, presented) = match session {
        Some((claim, presented)) => (Some(claim), Some(presented)),
        None => (None, presented_key(request, config, now)),
    };
    let check = async {
        match &claim {
            Some(claim) => authorize_member(store, site, claim, now).await,
            None => authorize(store, site, request, now, readers).await,
        }
    };
    let (site, access) = guarded(config, request, presented.as_ref(), now, check).await?;
    if let (Some(p), Access::Share(_)) = (&presented, &access) {
        let ip = tally_lambda::request::client_ip(request, false);
        let message = match config.guard.share_read(&p.hash, &ip, now) {
            ShareRead::Allowed => None,
            ShareRead::NetworkSpent => Some(format!(
                "a shared link may read {SHARE_REQUESTS_PER_MINUTE} times a minute from one network; retry shortly"
            )),
            ShareRead::LinkSpent => Some(format!(
                "a shared link may read {SHARE_LINK_REQUESTS_PER_MINUTE} times a minute from all its viewers; retry shortly"
            )),
        };
        if let Some(message) = message {
            return Err(ApiError {
                status: 429,
                code: "rate_limited",
                message,
            });
        }
    }
    Ok((site, access))
}

/// A presented credential: the hash it is stored under, what its tag
/// says ([`tally_core::account::tag::TagKeys::verify`], offline) and what kind it is. Never holds
/// the credential itself.
#[derive(Debug, Clone)]
pub(crate) struct Presented {
    /// Hex SHA-256 of the credential.
    pub(crate) hash: String,
    tag: TagVerdict,
    kind: Kind,
}

/// What kind of credential was presented.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Key,
    Share,
    Session,
}

impl Presented {
    fn of(token: &str, kind: Kind, config: &Config, now: Millis) -> Self {
        let tag = config
            .tag_keys
            .as_ref()
            .map_or(TagVerdict::Untagged, |keys| keys.verify(token, now));
        Self {
            hash: auth::hash_key(token),
            tag,
            kind,
        }
    }

    /// The answer to this credential refused without a read.
    fn refusal(&self) -> ApiError {
        match self.kind {
            Kind::Key => AuthError::Invalid.into(),
            Kind::Share => ShareError::Invalid.into(),
            Kind::Session => not_signed_in(),
        }
    }
}

/// The request's bearer credential, if it has one.
fn presented_key(request: &Request, config: &Config, now: Millis) -> Option<Presented> {
    let header = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    let token = auth::bearer(header).ok()?;
    let kind = if share::token_site(token).is_some() {
        Kind::Share
    } else {
        Kind::Key
    };
    Some(Presented::of(token, kind, config, now))
}

/// A credential check inside the failed-guess guard.
///
/// - A credential whose tag this deployment made ([`tag`]) skips the
///   guard: the check runs even while the network is refused, so a guesser
///   never locks out a key, link or session that was issued. A tagged
///   credential the check refuses (revoked, deleted, another site's)
///   counts as a failure of the network and goes through the guard for
///   the next [`crate::config::RECENTLY_VALID_MS`].
/// - A tag that fails is a guess told offline: counted, refused (429 once
///   the network is refused), nothing read.
/// - An untagged credential (made before tags, or with no secret set) is
///   taken from the client network's guard before it is checked and given
///   back unless it was a failed guess; one this instance saw valid
///   recently passes the guard (it is still checked, so a revocation
///   takes effect at once).
pub(crate) async fn guarded<T>(
    config: &Config,
    request: &Request,
    presented: Option<&Presented>,
    now: Millis,
    check: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    let ip = tally_lambda::request::client_ip(request, false);
    let limit = config.auth_failures_per_minute;
    match presented {
        Some(p) if p.tag == TagVerdict::Tagged(false) => {
            return Err(if config.guard.attempt(&ip, limit, now) {
                p.refusal()
            } else {
                too_many_attempts()
            });
        }
        Some(p)
            if p.tag == TagVerdict::Tagged(true)
                && !config.guard.recently_refused_tagged(&p.hash, now) =>
        {
            let result = check.await;
            if result.as_ref().is_err_and(is_guess) {
                config.guard.refused_tagged(&p.hash, &ip, now);
            }
            return result;
        }
        _ => {}
    }
    let presented = presented.map(|p| p.hash.as_str());
    let known = presented.is_some_and(|h| config.guard.recently_valid(h, now));
    if !known && !config.guard.attempt(&ip, limit, now) {
        return Err(too_many_attempts());
    }
    let result = check.await;
    if !known && !result.as_ref().is_err_and(is_guess) {
        config.guard.passed(&ip, now);
    }
    if let (Ok(_), Some(h)) = (&result, presented) {
        config.guard.valid(h, now);
    }
    result
}

/// The code of a signed-in user who must turn on 2FA first.
pub(crate) const TOTP_REQUIRED: &str = "totp_required";

/// The request's `tally_session` claim, if it carries a well-formed one,
/// and the session token as presented.
pub(crate) fn session_claim(
    request: &Request,
    config: &Config,
    now: Millis,
) -> Option<(Claim, Presented)> {
    let values = request
        .headers()
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok());
    let token =
        tally_core::account::cookie::cookie(values, tally_core::account::cookie::SESSION_COOKIE)?;
    let claim = Claim::of_token(token)?;
    Some((claim, Presented::of(token, Kind::Session, config, now)))
}

/// 401: no live session.
pub(crate) fn not_signed_in() -> ApiError {
    ApiError {
        status: 401,
        code: "not_signed_in",
        message: "sign in first: the session has ended or was revoked".into(),
    }
}

/// 403: a site the credential may not read (unknown sites alike).
pub(crate) fn forbidden(site: &str) -> ApiError {
    ApiError {
        status: 403,
        code: "forbidden",
        message: format!("you may not read {site:?}"),
    }
}

/// The user a session claim signs in, checked as the console checks it
/// (`tally_core::account::signin`): 401 without a live session, 403
/// `totp_required` when the instance requires 2FA and they have none.
/// Reads the session, then the user and the instance settings together;
/// writes nothing.
pub(crate) async fn signed_in<S: QueryStore>(
    store: &S,
    claim: &Claim,
    now: Millis,
) -> Result<User, ApiError> {
    let stored = store.session(&claim.uid, &claim.hash).await?;
    claim.accepts(stored, now).ok_or_else(not_signed_in)?;
    let (user, settings) = tokio::join!(store.user(&claim.uid), store.instance_settings());
    let user = user?.ok_or_else(not_signed_in)?;
    if signin::must_enable_totp(&settings?, &user) {
        return Err(ApiError {
            status: 403,
            code: TOTP_REQUIRED,
            message:
                "this instance requires two-factor authentication: turn it on in the console first"
                    .into(),
        });
    }
    Ok(user)
}

/// A signed-in member's read of a site: the instance owner reads every
/// site (as `owner`), a member the sites of their memberships (any role
/// reads); another site is 403, whether it exists or not.
async fn authorize_member<S: QueryStore>(
    store: &S,
    site_id: &str,
    claim: &Claim,
    now: Millis,
) -> Result<(Arc<Site>, Access), ApiError> {
    let user = signed_in(store, claim, now).await?;
    let membership = if user.instance_owner || !valid_site_id(site_id) {
        None
    } else {
        store.membership(site_id, &user.id).await?
    };
    let role = tally_core::account::role::site_role(user.instance_owner, membership)
        .filter(|r| r.allows(tally_core::account::Action::Read))
        .ok_or_else(|| forbidden(site_id))?;
    let site = store
        .site(site_id)
        .await?
        .ok_or_else(|| ApiError::not_found("unknown_site", "no such site"))?;
    Ok((site, Access::Member { role, uid: user.id }))
}

/// A shared link of `site_id` by its token: 401 when unknown, 403 when it
/// is a valid link of another site. Its state (revoked, expired, password)
/// is the caller's to check.
async fn find_share<S: QueryStore>(
    store: &S,
    site_id: &str,
    token: &str,
) -> Result<Share, ApiError> {
    let token_site = share::token_site(token).ok_or(AuthError::Malformed)?;
    let hash = share::hash_token(token);
    let valid = |record: Option<Share>| {
        record.filter(|r| {
            r.revoked_at.is_none() && salt::constant_time_eq(r.hash.as_bytes(), hash.as_bytes())
        })
    };
    if token_site != site_id {
        let elsewhere =
            valid_site_id(token_site) && valid(store.share(token_site, &hash).await?).is_some();
        return Err(if elsewhere {
            ApiError {
                status: 403,
                code: "forbidden",
                message: "this shared link does not grant access to this site".into(),
            }
        } else {
            ShareError::Invalid.into()
        });
    }
    valid(store.share(site_id, &hash).await?).ok_or_else(|| ShareError::Invalid.into())
}

/// Checks the bearer credential against the site: 401 without a valid key
/// or link, 403 with a valid one of another site.
async fn authorize<S: QueryStore>(
    store: &S,
    site_id: &str,
    request: &Request,
    now: i64,
    readers: Readers,
) -> Result<(Arc<Site>, Access), ApiError> {
    let header = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    let key = auth::bearer(header)?;
    if share::token_site(key).is_some() {
        if readers == Readers::Keys {
            return Err(ApiError {
                status: 401,
                code: "invalid_api_key",
                message: "a shared link reads the dashboard only; this API needs an API key".into(),
            });
        }
        let found = find_share(store, site_id, key).await?;
        let session = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok());
        share::check(&found, session, now)?;
        let site = store
            .site(site_id)
            .await?
            .ok_or_else(|| ApiError::not_found("unknown_site", "no such site"))?;
        return Ok((site, Access::Share(found)));
    }
    let key_site = auth::key_site(key).ok_or(AuthError::Malformed)?;
    let hash = auth::hash_key(key);
    let valid_for = |record: Option<tally_store::sites::ApiKeyRecord>| {
        record.is_some_and(|r| {
            r.revoked_at.is_none() && salt::constant_time_eq(r.hash.as_bytes(), hash.as_bytes())
        })
    };
    if key_site != site_id {
        return Err(
            if valid_site_id(key_site) && valid_for(store.api_key(key_site, &hash).await?) {
                AuthError::Forbidden.into()
            } else {
                AuthError::Invalid.into()
            },
        );
    }
    let record = store.api_key(site_id, &hash).await?;
    let scope = record.as_ref().map(|r| r.scope).unwrap_or_default();
    let maker = record.as_ref().and_then(|r| r.owner.clone());
    if !valid_for(record) {
        return Err(AuthError::Invalid.into());
    }
    // A key does no more than its maker may today: a removed maker's key
    // is refused like a revoked one, a demoted maker's reads.
    let scope = match maker {
        None => scope,
        Some(uid) => {
            let instance_owner = store.user(&uid).await?.is_some_and(|u| u.instance_owner);
            let membership = if instance_owner {
                None
            } else {
                store.membership(site_id, &uid).await?
            };
            scope
                .capped_by(tally_core::account::role::site_role(
                    instance_owner,
                    membership,
                ))
                .ok_or(AuthError::Invalid)?
        }
    };
    let site = store
        .site(site_id)
        .await?
        .ok_or_else(|| ApiError::not_found("unknown_site", "no such site"))?;
    Ok((site, Access::Key(scope)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn access_bodies_name_what_the_credential_allows() {
        let site = Site::new("a.example", &["a.example".into()], "UTC", 0).unwrap();
        let key =
            serde_json::to_value(AccessBody::of(&site, &Access::Key(KeyScope::Read))).unwrap();
        assert_eq!(
            key,
            serde_json::json!({"site": "a.example", "access": "key"})
        );
        let link = Share {
            hash: "h".into(),
            prefix: "ts_a".into(),
            label: "team".into(),
            filter: "page==/blog".into(),
            created_at: 1,
            expires_at: Some(5),
            password: None,
            revoked_at: None,
            segment: None,
        };
        let body = serde_json::to_value(AccessBody::of(&site, &Access::Share(link))).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"site": "a.example", "access": "share", "label": "team",
                "filter": "page==/blog", "expires_at": 5, "password": false})
        );
        let member = Access::Member {
            role: Role::Viewer,
            uid: "u1".into(),
        };
        let body = serde_json::to_value(AccessBody::of(&site, &member)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"site": "a.example", "access": "member", "role": "viewer"})
        );
    }
}
