//! One's own account: `GET me`, `GET sessions`, `DELETE sessions/{id}`,
//! `POST totp/setup|enable|disable`, and the instance owner's
//! `PUT settings`.

use crate::auth::{Signed, me as me_body};
use crate::body::{
    self, Done, SessionItem, SessionList, SettingsBody, SettingsRequest, TotpCodeRequest,
    TotpDisableRequest, TotpSetup,
};
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::permit::instance_permit;
use crate::store::ConsoleStore;
use crate::{audit, guard};
use lambda_http::{Body, Request, Response};
use tally_core::Millis;
use tally_core::account::role::InstanceAction;
use tally_core::account::{AuditAction, InstanceSettings, User, token, totp};

/// `GET me`.
pub async fn me<S: ConsoleStore>(
    store: &S,
    signed: &Signed,
) -> Result<Response<Body>, ConsoleError> {
    let body = me_body(store, &signed.user, &signed.session, &signed.settings).await?;
    Ok(json_response(200, &body))
}

/// `GET sessions`: one's live sessions, newest first.
pub async fn sessions<S: ConsoleStore>(
    store: &S,
    signed: &Signed,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let mut sessions: Vec<SessionItem> = store
        .sessions(&signed.user.id)
        .await?
        .into_iter()
        .filter(|s| s.is_live(now))
        .map(|s| SessionItem {
            id: token::session_id(&s.hash).to_owned(),
            current: s.hash == signed.session.hash,
            label: s.label,
            created: s.created,
            last_seen: s.last_seen,
        })
        .collect();
    sessions.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| a.id.cmp(&b.id)));
    Ok(json_response(200, &SessionList { sessions }))
}

/// `DELETE sessions/{id}`: ends one of one's sessions.
pub async fn revoke<S: ConsoleStore>(
    store: &S,
    signed: &Signed,
    id: &str,
) -> Result<Response<Body>, ConsoleError> {
    let missing = || ConsoleError::not_found("unknown_session", "no such session");
    if !token::valid_session_id(id) {
        return Err(missing());
    }
    let session = store
        .sessions(&signed.user.id)
        .await?
        .into_iter()
        .find(|s| token::session_id(&s.hash) == id)
        .ok_or_else(missing)?;
    if !store.delete_session(&signed.user.id, &session.hash).await? {
        return Err(missing());
    }
    Ok(json_response(200, &Done { ok: true }))
}

/// `POST totp/setup`: a new secret for an authenticator app (2FA stays off
/// until `totp/enable` proves the app has it).
pub async fn totp_setup<S: ConsoleStore>(
    store: &S,
    config: &Config,
    signed: &Signed,
) -> Result<Response<Body>, ConsoleError> {
    if signed.user.totp_enabled {
        return Err(ConsoleError::new(
            409,
            "totp_enabled",
            "two-factor authentication is on already",
        ));
    }
    let secret = crate::auth::random::<{ totp::SECRET_BYTES }>()?;
    let user = User {
        totp_secret: Some(totp::base32_encode(&secret)),
        ..signed.user.clone()
    };
    if !store.put_user(&user).await? {
        return Err(ConsoleError::not_signed_in());
    }
    Ok(json_response(
        200,
        &TotpSetup {
            secret: totp::base32_encode(&secret),
            otpauth_url: totp::otpauth_url(&secret, &config.issuer, &user.email),
        },
    ))
}

/// Checks a code of the signed-in user's secret, set up or on.
async fn check_code<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    signed: &Signed,
    code: &str,
    now: Millis,
) -> Result<(), ConsoleError> {
    let user = &signed.user;
    guard::code(store, config, request, user, user.totp_bytes(), code, now).await
}

/// Turns the signed-in user's 2FA on (with the secret set up) or off (the
/// secret forgotten), once its code was checked: the user as stored now
/// (after a TOTP step was recorded) is written, and audited.
async fn switch_totp<S: ConsoleStore>(
    store: &S,
    signed: &Signed,
    on: bool,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let mut user = store
        .user(&signed.user.id)
        .await?
        .ok_or_else(ConsoleError::not_signed_in)?;
    user.totp_enabled = on;
    if !on {
        user.totp_secret = None;
    }
    store.put_user(&user).await?;
    let action = if on {
        AuditAction::TotpEnabled
    } else {
        AuditAction::TotpDisabled
    };
    audit::instance(store, &user, action, &user.id, "", now).await?;
    if on {
        tracing::info!(event = "totp_enabled", uid = %user.id, "2FA on");
    } else {
        tracing::info!(event = "totp_disabled", uid = %user.id, "2FA off");
    }
    Ok(json_response(200, &Done { ok: true }))
}

/// `POST totp/enable {code}`: turns 2FA on once a code of the new secret
/// is right.
pub async fn totp_enable<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    signed: &Signed,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let body: TotpCodeRequest = body::parse(request, config.max_body)?;
    if signed.user.totp_enabled {
        return Err(ConsoleError::new(
            409,
            "totp_enabled",
            "two-factor authentication is on already",
        ));
    }
    if signed.user.totp_secret.is_none() {
        return Err(ConsoleError::new(
            409,
            "totp_not_set_up",
            "call totp/setup first",
        ));
    }
    check_code(store, config, request, signed, &body.code, now).await?;
    switch_totp(store, signed, true, now).await
}

/// `POST totp/disable {password, code}`: turns 2FA off (not while the
/// instance requires it).
pub async fn totp_disable<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    signed: &Signed,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let body: TotpDisableRequest = body::parse(request, config.max_body)?;
    if !signed.user.totp_enabled {
        return Err(ConsoleError::new(
            409,
            "totp_disabled",
            "two-factor authentication is off",
        ));
    }
    if signed.settings.require_2fa {
        return Err(ConsoleError::new(
            409,
            "totp_required_by_instance",
            "this instance requires two-factor authentication",
        ));
    }
    if !guard::password(store, config, request, &signed.user, body.password, now).await? {
        return Err(guard::wrong_password());
    }
    check_code(store, config, request, signed, &body.code, now).await?;
    switch_totp(store, signed, false, now).await
}

/// `PUT settings {require_2fa}` (instance owner).
pub async fn put_settings<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    signed: &Signed,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    instance_permit(
        signed,
        InstanceAction::ChangeSettings,
        "only the instance owner changes instance settings",
    )?;
    let body: SettingsRequest = body::parse(request, config.max_body)?;
    let settings = InstanceSettings {
        require_2fa: body.require_2fa,
    };
    store.put_instance_settings(&settings).await?;
    let detail = format!("require_2fa={}", settings.require_2fa);
    audit::instance(
        store,
        &signed.user,
        AuditAction::SettingsChanged,
        "instance",
        &detail,
        now,
    )
    .await?;
    Ok(json_response(
        200,
        &SettingsBody {
            require_2fa: settings.require_2fa,
        },
    ))
}
