//! The console's request and response bodies, typed, and reading a JSON
//! request body within its bound (malformed bodies are a 400 that never
//! echoes what was sent: it may hold a password).

use crate::error::ConsoleError;
use lambda_http::Request;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tally_core::Millis;
use tally_core::account::Role;

/// Reads a request's JSON body into `T`: 413 past `max` bytes, 400 for
/// anything that is not `T` (with the line and column, not the text).
pub fn parse<T: DeserializeOwned>(request: &Request, max: usize) -> Result<T, ConsoleError> {
    let bytes: &[u8] = request.body().as_ref();
    if bytes.len() > max {
        return Err(ConsoleError::new(
            413,
            "body_too_large",
            format!("the body may have at most {max} bytes"),
        ));
    }
    if bytes.is_empty() {
        return Err(ConsoleError::bad_request(
            "invalid_body",
            "send a JSON object",
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Data => "a field is missing or of the wrong type",
            serde_json::error::Category::Eof => "the JSON ends too early",
            _ => "the body is not JSON",
        };
        ConsoleError::bad_request(
            "invalid_body",
            format!("{what} (line {}, column {})", e.line(), e.column()),
        )
    })
}

/// `POST setup`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupRequest {
    /// The setup token (`tsu_…`).
    pub token: String,
    /// The owner's email.
    pub email: String,
    /// The owner's password.
    pub password: String,
}

/// `POST login`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    /// The email.
    pub email: String,
    /// The password.
    pub password: String,
}

/// `POST login/totp`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotpLoginRequest {
    /// The challenge `POST login` answered.
    pub challenge: String,
    /// The 6-digit code.
    pub code: String,
}

/// `POST totp/enable`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotpCodeRequest {
    /// The 6-digit code.
    pub code: String,
}

/// `POST totp/disable`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotpDisableRequest {
    /// The password.
    pub password: String,
    /// A current code.
    pub code: String,
}

/// `PUT settings`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsRequest {
    /// Whether every user must turn on 2FA.
    pub require_2fa: bool,
}

/// `GET setup`.
#[derive(Debug, Serialize)]
pub struct SetupNeeded {
    /// Whether the instance has no owner yet.
    pub needed: bool,
}

/// The user in [`Me`].
#[derive(Debug, Serialize)]
pub struct MeUser {
    /// User id.
    pub id: String,
    /// Email.
    pub email: String,
    /// Whether they own the instance.
    pub instance_owner: bool,
    /// Whether 2FA is on.
    pub totp_enabled: bool,
}

/// A site in [`Me`].
#[derive(Debug, Serialize)]
pub struct MeSite {
    /// Site id.
    pub id: String,
    /// The role the user acts with.
    pub role: Role,
}

/// The instance settings in [`Me`].
#[derive(Debug, Serialize)]
pub struct MeSettings {
    /// Whether every user must turn on 2FA.
    pub require_2fa: bool,
}

/// `GET me`, and the answer of every login.
#[derive(Debug, Serialize)]
pub struct Me {
    /// Who.
    pub user: MeUser,
    /// The value to send as `x-csrf-token`.
    pub csrf: String,
    /// The user must turn on 2FA before anything else (the instance
    /// requires it and theirs is off).
    pub require_2fa: bool,
    /// The instance settings.
    pub settings: MeSettings,
    /// Their sites.
    pub sites: Vec<MeSite>,
}

/// `POST login` for a user with 2FA.
#[derive(Debug, Serialize)]
pub struct TotpChallenge {
    /// Always true.
    pub totp_required: bool,
    /// Send it with the code to `POST login/totp`.
    pub challenge: String,
}

/// One of `GET sessions`.
#[derive(Debug, Serialize)]
pub struct SessionItem {
    /// The first 12 hex of the session's hash (for `DELETE sessions/{id}`).
    pub id: String,
    /// "Chrome on macOS".
    pub label: String,
    /// When it started.
    pub created: Millis,
    /// When it was last used (to ten minutes).
    pub last_seen: Millis,
    /// Whether it is the one asking.
    pub current: bool,
}

/// `GET sessions`.
#[derive(Debug, Serialize)]
pub struct SessionList {
    /// Live sessions, newest first.
    pub sessions: Vec<SessionItem>,
}

/// `POST totp/setup`.
#[derive(Debug, Serialize)]
pub struct TotpSetup {
    /// The secret, base32.
    pub secret: String,
    /// The `otpauth://` URL for a QR code.
    pub otpauth_url: String,
}

/// A plain acknowledgement.
#[derive(Debug, Serialize)]
pub struct Done {
    /// Always true.
    pub ok: bool,
}

/// `PUT settings`.
#[derive(Debug, Serialize)]
pub struct SettingsBody {
    /// Whether every user must turn on 2FA.
    pub require_2fa: bool,
}

/// `POST password/forgot`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgotRequest {
    /// The email of the account.
    pub email: String,
}

/// `POST password/forgot`'s answer, the same for every email.
#[derive(Debug, Serialize)]
pub struct ForgotAccepted {
    /// Always true.
    pub ok: bool,
    /// Whether this instance sends mail at all (without a mailer no link
    /// is sent: ask the instance owner for one).
    pub mail: bool,
}

/// `POST password/reset`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetRequest {
    /// The reset token (`tr_…`, the link's `#reset=` fragment).
    pub token: String,
    /// The new password.
    pub password: String,
}

/// `POST password/change`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangePasswordRequest {
    /// The current password.
    pub current: String,
    /// The new password.
    pub new: String,
}

/// `POST password/change`'s answer.
#[derive(Debug, Serialize)]
pub struct PasswordChanged {
    /// Always true.
    pub ok: bool,
    /// How many other sessions of the user ended.
    pub sessions_ended: usize,
}

/// `POST users/{uid}/reset`'s answer (the token is shown once).
#[derive(Debug, Serialize)]
pub struct ResetLinkCreated {
    /// `{origin}/console#reset={token}`.
    pub link: String,
    /// The token (`tr_…`).
    pub token: String,
    /// Whether it was mailed to the user.
    pub mailed: bool,
    /// When it ends.
    pub expires: Millis,
}

/// The value of query parameter `name` in the request's URI, as written.
pub fn query_param(request: &Request, name: &str) -> Option<String> {
    request
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}
