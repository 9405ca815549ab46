//! Who is asking: the session behind the `tally_session` cookie (checked
//! by `tally_core::account::signin`, the rules the query function applies
//! too), the CSRF and `Origin` check of state-changing requests, the
//! `require_2fa` gate, and starting a session after a login. Randomness
//! comes from ring's system generator.

use crate::body::{Me, MeSettings, MeSite, MeUser};
use crate::config::Config;
use crate::error::{ConsoleError, json_response, with_cookie};
use crate::store::ConsoleStore;
use lambda_http::{Body, Request, Response};
use tally_core::Millis;
use tally_core::account::signin::{self, Claim};
use tally_core::account::{
    ConsoleSession, InstanceSettings, Role, User, cookie, csrf, guess, record, token,
};

/// A signed-in request.
#[derive(Debug, Clone)]
pub struct Signed {
    /// The user.
    pub user: User,
    /// Their session.
    pub session: ConsoleSession,
    /// The instance settings, read once per request.
    pub settings: InstanceSettings,
}

impl Signed {
    /// Whether the instance requires 2FA and the user has not turned it on.
    pub fn must_enable_totp(&self) -> bool {
        signin::must_enable_totp(&self.settings, &self.user)
    }
}

/// `n` random bytes.
pub fn random<const N: usize>() -> Result<[u8; N], ConsoleError> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; N];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| {
            tracing::error!("no randomness");
            ConsoleError::internal()
        })?;
    Ok(bytes)
}

/// A header's value.
pub fn header<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    tally_lambda::request::header(request, name)
}

/// The request's `Cookie` header values.
fn cookie_headers(request: &Request) -> impl Iterator<Item = &str> {
    request
        .headers()
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
}

/// A cookie of the request.
pub fn request_cookie<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    cookie::cookie(cookie_headers(request), name)
}

/// The host the browser asked for: `X-Forwarded-Host` when a front door
/// put it there (the stack's CloudFront copies the viewer's `Host` into it,
/// as the API behind it sees its own), else `Host`. A page of another
/// origin cannot set it on a request it makes: it is no CORS-safelisted
/// header, and the console answers no preflight.
fn request_host(request: &Request) -> Option<&str> {
    header(request, "x-forwarded-host").or_else(|| header(request, "host"))
}

/// The `Origin` check alone, for state-changing requests that carry no
/// session yet (setup, login): a page of another origin may not post them.
pub fn check_origin(request: &Request) -> Result<(), ConsoleError> {
    let method = request.method().as_str();
    if !csrf::is_state_changing(method) {
        return Ok(());
    }
    if let Some(origin) = header(request, "origin") {
        let host = request_host(request);
        let same = csrf::origin_host(origin)
            .zip(host)
            .is_some_and(|(from, host)| from.eq_ignore_ascii_case(host.trim()));
        if !same {
            return Err(csrf::CsrfError::Origin.into());
        }
    }
    Ok(())
}

/// The signed-in user of a request ([`signin`]: the cookie's claim, a
/// stored session that answers it), its CSRF token and origin checked for
/// a state-changing method; `last_seen` written every ten minutes.
pub async fn signed_in<S: ConsoleStore>(
    store: &S,
    request: &Request,
    now: Millis,
) -> Result<Signed, ConsoleError> {
    let claim =
        Claim::of_cookies(cookie_headers(request)).ok_or_else(ConsoleError::not_signed_in)?;
    let stored = store.session(&claim.uid, &claim.hash).await?;
    let mut session = claim
        .accepts(stored, now)
        .ok_or_else(ConsoleError::not_signed_in)?;
    csrf::check(
        request.method().as_str(),
        header(request, csrf::CSRF_HEADER),
        &session.csrf,
        header(request, "origin"),
        request_host(request),
    )?;
    let user = store
        .user(&claim.uid)
        .await?
        .ok_or_else(ConsoleError::not_signed_in)?;
    if session.needs_touch(now) {
        session.last_seen = now;
        store.touch_session(&session).await?;
    }
    let settings = store.instance_settings().await?;
    Ok(Signed {
        user,
        session,
        settings,
    })
}

/// The `me` body of a user with a session.
pub async fn me<S: ConsoleStore>(
    store: &S,
    user: &User,
    session: &ConsoleSession,
    settings: &InstanceSettings,
) -> Result<Me, ConsoleError> {
    let sites = if user.instance_owner {
        store
            .sites()
            .await?
            .into_iter()
            .map(|s| MeSite {
                id: s.id,
                role: Role::Owner,
            })
            .collect()
    } else {
        store
            .user_sites(&user.id)
            .await?
            .into_iter()
            .map(|(id, role)| MeSite { id, role })
            .collect()
    };
    Ok(Me {
        user: MeUser {
            id: user.id.clone(),
            email: user.email.clone(),
            instance_owner: user.instance_owner,
            totp_enabled: user.totp_enabled,
        },
        csrf: session.csrf.clone(),
        require_2fa: signin::must_enable_totp(settings, user),
        settings: MeSettings {
            require_2fa: settings.require_2fa,
        },
        sites,
    })
}

/// Starts a session for a user who proved who they are: stores it,
/// remembers the browser (a new `tally_device` cookie if it had none) and
/// answers `me` with the cookies. The session token is tagged
/// (`tally_core::account::tag`), so the query function takes it even from a network
/// refused for failed guesses.
pub async fn start_session<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    mut user: User,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let session_token = tally_core::account::tag::tagged_credential(
        config.tag_keys.current(),
        token::SESSION_PREFIX,
        &user.id,
        &random::<20>()?,
    );
    let csrf_value = token::device_id_from_bytes(&random::<16>()?);
    let label = record::session_label(header(request, "user-agent").unwrap_or_default());
    let session = ConsoleSession::new(
        token::hash_token(&session_token),
        &user.id,
        label,
        csrf_value,
        now,
    );
    // At most `caps::MAX_SESSIONS` a user: the expired, then the least
    // recently used, end.
    let held = store.sessions(&user.id).await?;
    for old in tally_core::account::caps::sessions_to_end(&held, now) {
        store.delete_session(&user.id, &old.hash).await?;
    }
    store.put_session(&session).await?;
    let (device, new_device) = match request_cookie(request, cookie::DEVICE_COOKIE)
        .filter(|d| token::valid_device_id(d))
    {
        Some(device) => (device.to_owned(), false),
        None => (token::device_id_from_bytes(&random::<16>()?), true),
    };
    if user.remember_device(&guess::device_hash(&device)) && !store.put_user(&user).await? {
        return Err(ConsoleError::not_signed_in());
    }
    let settings = store.instance_settings().await?;
    let body = me(store, &user, &session, &settings).await?;
    let mut response = with_cookie(
        json_response(200, &body),
        &cookie::session_cookie(&session_token),
    );
    if new_device {
        response = with_cookie(response, &cookie::device_cookie(&device));
    }
    tracing::info!(event = "session_started", uid = %user.id, "signed in");
    Ok(response)
}
