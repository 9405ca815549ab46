//! Passwords after setup: a reset link made by the instance owner
//! (`POST users/{uid}/reset`), one mailed on request
//! (`POST password/forgot {email}`), setting a password with either
//! (`POST password/reset {token, password}`), and changing one's own
//! (`POST password/change {current, new}`).
//!
//! A reset link is `{public origin}/console#reset=tr_{40 hex}.{uid}`; only
//! the token's hash is stored (`USER#{uid}` / `RESET#{hash}`), for
//! [`OWNER_RESET_MS`] when the owner makes it (they may pass it on by
//! hand) and [`RESET_MS`] when it is mailed on request. Only the instance
//! owner makes links for others: a site owner could otherwise take over an
//! account that is also a member of sites they do not own.
//!
//! `password/forgot` answers 202 `{ok, mail}` whatever the email: whether
//! it names a user shows only in the mailbox. Its requests are counted in
//! the guess windows like logins (per account and network, per network,
//! per account), under an account key of their own, so they never lock a
//! login out; units are never given back. The link's origin is
//! `PUBLIC_URL`, else the `Host` the request reached: API Gateway routes
//! only its own domains to the function, so a forged `Host` does not get
//! here; a proxy that forwards any `Host` needs `PUBLIC_URL`.
//!
//! Setting the password spends the token in the transaction that writes
//! the password (a second use, an expired or superseded link: 410
//! `reset_invalid`), then ends every session of the user, their pending
//! 2FA logins and their other reset links. It signs no one in: a user with
//! 2FA still needs their code at the next login. A change ends every
//! session but the current one. Both are audited in the instance log.
//! Logs name the user id, never an email, a password or a token.

use crate::auth::{Signed, check_origin, random};
use crate::body::{
    self, ChangePasswordRequest, Done, ForgotAccepted, ForgotRequest, PasswordChanged,
    ResetLinkCreated, ResetRequest,
};
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::login::{email, hash_password};
use crate::mail;
use crate::members::CONSOLE_PAGE;
use crate::permit::instance_permit;
use crate::sites::public_origin;
use crate::store::ConsoleStore;
use crate::{audit, guard};
use lambda_http::{Body, Request, Response};
use tally_core::Millis;
use tally_core::account::record::{OWNER_RESET_MS, RESET_MS};
use tally_core::account::role::InstanceAction;
use tally_core::account::{AuditAction, PasswordReset, User, password, token};

/// The fragment a reset link carries its token in.
pub const RESET_FRAGMENT: &str = "#reset=";

fn reset_invalid() -> ConsoleError {
    ConsoleError::new(
        410,
        "reset_invalid",
        "this reset link was used, replaced or has expired: ask for a new one",
    )
}

/// A new reset link of `user`: stored, and its token and link.
async fn make_link<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    user: &User,
    by: Option<&User>,
    now: Millis,
) -> Result<(String, String, PasswordReset), ConsoleError> {
    let life = if by.is_some() {
        OWNER_RESET_MS
    } else {
        RESET_MS
    };
    let reset_token = token::reset_token(&user.id, &random::<20>()?);
    let reset = PasswordReset::new(
        token::hash_token(&reset_token),
        &user.id,
        by.map(|u| u.id.clone()),
        now,
        life,
    );
    store.put_reset(&reset).await?;
    let link = format!(
        "{}{CONSOLE_PAGE}{RESET_FRAGMENT}{reset_token}",
        public_origin(config.public_url.as_deref(), request),
    );
    Ok((reset_token, link, reset))
}

/// Mails a reset link: whether it was sent (a failure is logged, never
/// the address or the link).
async fn send(config: &Config, user: &User, link: &str, by: Option<&User>) -> bool {
    let Some(mailer) = &config.mailer else {
        return false;
    };
    let message = mail::password_reset(&user.email, link, by.map(|u| u.email.as_str()));
    match mailer.send(&message).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, uid = %user.id, "the reset link was not mailed");
            false
        }
    }
}

/// `POST users/{uid}/reset` (instance owner): a reset link for a user,
/// shown once and mailed to them when the console has a mailer.
pub async fn owner_reset<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    signed: &Signed,
    uid: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    instance_permit(
        signed,
        InstanceAction::ResetPasswords,
        "only the instance owner makes password reset links",
    )?;
    let missing = || ConsoleError::not_found("user_not_found", "no such user");
    if !token::valid_user_id(uid) {
        return Err(missing());
    }
    let user = store.user(uid).await?.ok_or_else(missing)?;
    let (reset_token, link, reset) =
        make_link(store, config, request, &user, Some(&signed.user), now).await?;
    let mailed = send(config, &user, &link, Some(&signed.user)).await;
    let target = format!("user:{}", user.id);
    audit::instance(
        store,
        &signed.user,
        AuditAction::PasswordReset,
        &target,
        if mailed {
            "reset link made and mailed"
        } else {
            "reset link made"
        },
        now,
    )
    .await?;
    tracing::info!(event = "reset_link_made", uid = %user.id, mailed, "password reset link made");
    Ok(json_response(
        201,
        &ResetLinkCreated {
            link,
            token: reset_token,
            mailed,
            expires: reset.expires,
        },
    ))
}

/// `POST password/forgot {email}`: 202 whether or not a user has the
/// email; when one has and the console has a mailer, a reset link (good
/// for [`RESET_MS`]) is mailed to them.
pub async fn forgot<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    check_origin(request)?;
    let body: ForgotRequest = body::parse(request, config.max_body)?;
    let email = email(&body.email)?;
    // Every answer takes at least FORGOT_FLOOR, mailed or not, so its time
    // does not tell a registered address from another.
    let floor = tokio::time::Instant::now() + FORGOT_FLOOR;
    let answer = forgot_for(store, config, request, &email, now).await;
    tokio::time::sleep_until(floor).await;
    answer
}

/// The least time `password/forgot` answers in: longer than making and
/// mailing a link usually takes (a token write and one SES call).
pub const FORGOT_FLOOR: std::time::Duration = std::time::Duration::from_millis(400);

async fn forgot_for<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    email: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let email = email.to_owned();
    let user = store.user_by_email(&email).await?;
    // Counted like a login, in windows of their own; never given back.
    let account = format!("reset:{}", guard::account_of(user.as_ref(), &email));
    guard::take(store, config, request, &account, None, now).await?;
    let mail = config.mailer.is_some();
    match user {
        Some(user) if mail => {
            let (_, link, _) = make_link(store, config, request, &user, None, now).await?;
            let mailed = send(config, &user, &link, None).await;
            tracing::info!(event = "reset_requested", uid = %user.id, mailed, "reset link mailed");
        }
        _ => tracing::info!(event = "reset_requested", "no reset link mailed"),
    }
    Ok(json_response(202, &ForgotAccepted { ok: true, mail }))
}

/// `POST password/reset {token, password}`: sets the password of the
/// token's user (validated like setup's), spends the token, ends every
/// session of the user. Signs no one in.
pub async fn reset<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    check_origin(request)?;
    let body: ResetRequest = body::parse(request, config.max_body)?;
    let presented = body.token.trim();
    let uid = token::reset_user(presented).ok_or_else(reset_invalid)?;
    password::validate(&body.password)?;
    let reset = store
        .reset(uid, &token::hash_token(presented))
        .await?
        .filter(|r| r.is_live(now) && r.uid == uid)
        .ok_or_else(reset_invalid)?;
    let user = store.user(uid).await?.ok_or_else(reset_invalid)?;
    let phc = hash_password(body.password).await?;
    if !store.complete_reset(&reset, &phc, now).await? {
        return Err(reset_invalid());
    }
    let ended = store.end_credentials(uid, None).await?;
    let detail = match reset.by {
        Some(_) => "set with a reset link made by the instance owner",
        None => "set with a mailed reset link",
    };
    audit::instance(
        store,
        &user,
        AuditAction::PasswordChanged,
        &format!("user:{uid}"),
        detail,
        now,
    )
    .await?;
    tracing::info!(
        event = "password_reset",
        uid,
        ended,
        "password set with a reset link"
    );
    Ok(json_response(200, &Done { ok: true }))
}

/// `POST password/change {current, new}`: a signed-in user's new password
/// (the current one checked, guess-limited); every other session of theirs
/// ends.
pub async fn change<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    signed: &Signed,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let body: ChangePasswordRequest = body::parse(request, config.max_body)?;
    let user = &signed.user;
    if !guard::password(store, config, request, user, body.current, now).await? {
        tracing::info!(event = "password_change_failed", uid = %user.id, "wrong password");
        return Err(guard::wrong_password());
    }
    let phc = hash_password(body.new).await?;
    if !store
        .change_password(&user.id, &user.password, &phc)
        .await?
    {
        return Err(ConsoleError::new(
            409,
            "password_changed",
            "the password changed meanwhile: sign in again",
        ));
    }
    let ended = store
        .end_credentials(&user.id, Some(&signed.session.hash))
        .await?;
    let detail = format!("changed; {ended} other sessions ended");
    audit::instance(
        store,
        user,
        AuditAction::PasswordChanged,
        &format!("user:{}", user.id),
        &detail,
        now,
    )
    .await?;
    tracing::info!(event = "password_changed", uid = %user.id, ended, "password changed");
    Ok(json_response(
        200,
        &PasswordChanged {
            ok: true,
            sessions_ended: ended,
        },
    ))
}
