//! First run and signing in: `GET|POST setup`, `POST login`,
//! `POST login/totp`, `POST logout`.
//!
//! Failed logins are counted in the guess windows, not audited one by one;
//! logs name what happened and the user id, never an email, a password, a
//! code, a token, an address or a user agent.

use crate::auth::{Signed, check_origin, start_session};
use crate::body::{
    self, Done, LoginRequest, SetupNeeded, SetupRequest, TotpChallenge, TotpLoginRequest,
};
use crate::config::Config;
use crate::error::{ConsoleError, json_response, with_cookie};
use crate::store::ConsoleStore;
use crate::{audit, guard};
use lambda_http::{Body, Request, Response};
use tally_core::Millis;
use tally_core::account::{AuditAction, PendingLogin, User, cookie, password, record, token};
use tally_store::accounts::SetupRefused;

/// Hashes a new password off the async workers.
pub async fn hash_password(password: String) -> Result<String, ConsoleError> {
    password::validate(&password)?;
    let salt = crate::auth::random::<16>()?;
    tokio::task::spawn_blocking(move || password::hash(&password, &salt))
        .await
        .map_err(|_| ConsoleError::internal())?
        .map_err(ConsoleError::from)
}

/// A normalised email, or 400 `invalid_email`.
pub(crate) fn email(text: &str) -> Result<String, ConsoleError> {
    record::normalize_email(text)
        .ok_or_else(|| ConsoleError::bad_request("invalid_email", "that is not an email address"))
}

fn already_set_up() -> ConsoleError {
    ConsoleError::new(409, "already_set_up", "this instance has an owner already")
}

/// `GET setup`: whether the instance still needs its first owner.
pub async fn setup_needed<S: ConsoleStore>(store: &S) -> Result<Response<Body>, ConsoleError> {
    let needed = store.instance_owner().await?.is_none();
    Ok(json_response(200, &SetupNeeded { needed }))
}

/// `POST setup {token, email, password}`: creates the instance owner with
/// a setup token (`tally setup-token`), once, and signs them in.
pub async fn setup<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    check_origin(request)?;
    let body: SetupRequest = body::parse(request, config.max_body)?;
    let invalid = || {
        ConsoleError::new(
            403,
            "invalid_setup_token",
            "invalid, used or expired setup token",
        )
    };
    if store.instance_owner().await?.is_some() {
        return Err(already_set_up());
    }
    if !token::is_setup_token(body.token.trim()) {
        return Err(invalid());
    }
    let email = email(&body.email)?;
    let phc = hash_password(body.password).await?;
    let user = User {
        id: token::user_id_from_bytes(&crate::auth::random::<8>()?),
        email,
        password: phc,
        totp_secret: None,
        totp_enabled: false,
        totp_last_step: None,
        instance_owner: true,
        created: now,
        known_devices: Vec::new(),
    };
    let hash = token::hash_token(body.token.trim());
    match store.complete_setup(&hash, &user, now).await? {
        Ok(()) => {}
        Err(SetupRefused::OwnerExists) => return Err(already_set_up()),
        Err(SetupRefused::EmailTaken) => {
            return Err(ConsoleError::new(
                409,
                "email_taken",
                "a user has this email already",
            ));
        }
        Err(SetupRefused::BadToken) => return Err(invalid()),
    }
    tracing::info!(event = "setup", uid = %user.id, "instance owner created");
    audit::instance(
        store,
        &user,
        AuditAction::Setup,
        &user.id,
        "instance owner created",
        now,
    )
    .await?;
    start_session(store, config, request, user, now).await
}

/// `POST login {email, password}`: a session, or a 2FA challenge.
pub async fn login<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    check_origin(request)?;
    let body: LoginRequest = body::parse(request, config.max_body)?;
    let email = email(&body.email)?;
    let user = store.user_by_email(&email).await?;
    let account = guard::account_of(user.as_ref(), &email);
    let taken = guard::take(store, config, request, &account, user.as_ref(), now).await?;
    let right = guard::check_password(
        body.password.clone(),
        user.as_ref().map(|u| u.password.clone()),
    )
    .await?;
    let Some(mut user) = user.filter(|_| right) else {
        tracing::info!(event = "login_failed", "wrong email or password");
        return Err(ConsoleError::new(
            401,
            "invalid_credentials",
            "wrong email or password",
        ));
    };
    guard::give_back(store, taken).await;
    if password::needs_rehash(&user.password) {
        user.password = hash_password(body.password).await?;
        store.put_user(&user).await?;
    }
    if user.totp_enabled {
        let challenge = token::challenge_token(&user.id, &crate::auth::random::<20>()?);
        let pending = PendingLogin::new(token::hash_token(&challenge), &user.id, now);
        store.put_pending(&pending).await?;
        return Ok(json_response(
            200,
            &TotpChallenge {
                totp_required: true,
                challenge,
            },
        ));
    }
    start_session(store, config, request, user, now).await
}

/// `POST login/totp {challenge, code}`: the session of a login that passed
/// its password.
pub async fn login_totp<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    check_origin(request)?;
    let body: TotpLoginRequest = body::parse(request, config.max_body)?;
    let invalid =
        || ConsoleError::new(401, "invalid_challenge", "the login expired: sign in again");
    let uid = token::challenge_user(body.challenge.trim()).ok_or_else(invalid)?;
    let hash = token::hash_token(body.challenge.trim());
    let pending = store
        .pending(uid, &hash)
        .await?
        .filter(|p| p.expires > now && p.uid == uid)
        .ok_or_else(invalid)?;
    let user = store.user(&pending.uid).await?.ok_or_else(invalid)?;
    let secret = user.totp_bytes().filter(|_| user.totp_enabled);
    guard::code(store, config, request, &user, secret, &body.code, now).await?;
    if !store.spend_pending(&user.id, &hash).await? {
        return Err(invalid());
    }
    // Read again: the accepted step is part of the record now.
    let user = store.user(&user.id).await?.ok_or_else(invalid)?;
    start_session(store, config, request, user, now).await
}

/// `POST logout`: ends the session and clears its cookie.
pub async fn logout<S: ConsoleStore>(
    store: &S,
    signed: &Signed,
) -> Result<Response<Body>, ConsoleError> {
    store
        .delete_session(&signed.user.id, &signed.session.hash)
        .await?;
    Ok(with_cookie(
        json_response(200, &Done { ok: true }),
        &cookie::clear_session_cookie(),
    ))
}
