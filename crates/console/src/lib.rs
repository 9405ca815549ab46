//! `tally-console`: the console's HTTP door, `/api/console/…` (issue 21).
//! This file only routes: a method and a path to a handler.
//!
//! Routes, JSON in and out:
//! - `GET setup`, `POST setup {token, email, password}`: the first owner
//!   ([`login`]);
//! - `POST login {email, password}`, `POST login/totp {challenge, code}`,
//!   `POST logout` ([`login`]);
//! - `GET me`, `GET sessions`, `DELETE sessions/{id}`,
//!   `POST totp/setup|enable|disable`, `PUT settings` ([`account`]).
//!
//! Every route but setup and login needs the `tally_session` cookie
//! ([`auth`]); a state-changing one also `x-csrf-token` and, when it
//! sends `Origin`, the same host (403 `csrf`). When the instance requires
//! 2FA, a user without it may only read `me`, set 2FA up and sign out
//! (403 `totp_required`). Passwords and codes are guess-limited
//! ([`guard`]). [`handle`] is a plain async function over the
//! [`ConsoleStore`] port and a clock; `main.rs` wires it to `lambda_http`;
//! [`error`] is the one place errors become responses.
//!
//! `GET /console` serves the console page ([`page`]): the browser side of
//! these routes, hash-routed, under a strict CSP.

pub mod account;
pub mod auth;
pub mod body;
pub mod config;
pub mod error;
pub mod guard;
pub mod login;
pub mod page;
pub mod store;

pub use crate::config::Config;
pub use crate::store::ConsoleStore;

use crate::error::{ConsoleError, error_response};
use lambda_http::http::header::HeaderValue;
use lambda_http::{Body, Request, Response};
use tally_store::clock::Clock;

/// The path every console route is under.
pub const PREFIX: &str = "/api/console/";

/// A console route, by method and path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route<'a> {
    SetupNeeded,
    Setup,
    Login,
    LoginTotp,
    Logout,
    Me,
    Sessions,
    RevokeSession(&'a str),
    TotpSetup,
    TotpEnable,
    TotpDisable,
    PutSettings,
}

impl Route<'_> {
    /// Whether a user who must turn on 2FA may still use it.
    fn open_before_totp(&self) -> bool {
        matches!(
            self,
            Self::Logout | Self::Me | Self::TotpSetup | Self::TotpEnable
        )
    }
}

fn route<'a>(method: &str, segments: &[&'a str]) -> Result<Route<'a>, ConsoleError> {
    let route = match segments {
        ["setup"] => match method {
            "GET" => Route::SetupNeeded,
            _ => Route::Setup,
        },
        ["login"] => Route::Login,
        ["login", "totp"] => Route::LoginTotp,
        ["logout"] => Route::Logout,
        ["me"] => Route::Me,
        ["sessions"] => Route::Sessions,
        ["sessions", id] => Route::RevokeSession(id),
        ["totp", "setup"] => Route::TotpSetup,
        ["totp", "enable"] => Route::TotpEnable,
        ["totp", "disable"] => Route::TotpDisable,
        ["settings"] => Route::PutSettings,
        _ => {
            return Err(ConsoleError::not_found(
                "not_found",
                "no such console route",
            ));
        }
    };
    let allowed = match route {
        Route::SetupNeeded | Route::Me | Route::Sessions => "GET",
        Route::RevokeSession(_) => "DELETE",
        Route::PutSettings => "PUT",
        _ => "POST",
    };
    if method == allowed {
        Ok(route)
    } else {
        Err(ConsoleError::new(
            405,
            "method_not_allowed",
            format!("use {allowed}"),
        ))
    }
}

/// Handles one request under [`PREFIX`].
pub async fn handle<S: ConsoleStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: Request,
) -> Response<Body> {
    if request.uri().path() == page::PATH {
        return match request.method().as_str() {
            "GET" | "HEAD" => page::console(),
            _ => error_response(&ConsoleError::new(405, "method_not_allowed", "use GET")),
        };
    }
    let mut response = match Box::pin(dispatch(store, clock, config, &request)).await {
        Ok(response) => response,
        Err(e) => error_response(&e),
    };
    let headers = response.headers_mut();
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("cache-control", HeaderValue::from_static("no-store"));
    response
}

async fn dispatch<S: ConsoleStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
) -> Result<Response<Body>, ConsoleError> {
    let path = request.uri().path();
    let rest = path
        .strip_prefix(PREFIX)
        .ok_or_else(|| ConsoleError::not_found("not_found", "no such console route"))?;
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let route = route(request.method().as_str(), &segments)?;
    let now = clock.now();
    match route {
        Route::SetupNeeded => return login::setup_needed(store).await,
        Route::Setup => return login::setup(store, config, request, now).await,
        Route::Login => return login::login(store, config, request, now).await,
        Route::LoginTotp => return login::login_totp(store, config, request, now).await,
        _ => {}
    }
    let signed = auth::signed_in(store, request, now).await?;
    if signed.must_enable_totp() && !route.open_before_totp() {
        return Err(ConsoleError::totp_required());
    }
    match route {
        Route::Logout => login::logout(store, &signed).await,
        Route::Me => account::me(store, &signed).await,
        Route::Sessions => account::sessions(store, &signed, now).await,
        Route::RevokeSession(id) => account::revoke(store, &signed, id).await,
        Route::TotpSetup => account::totp_setup(store, config, &signed).await,
        Route::TotpEnable => account::totp_enable(store, config, request, &signed, now).await,
        Route::TotpDisable => account::totp_disable(store, config, request, &signed, now).await,
        Route::PutSettings => account::put_settings(store, config, request, &signed, now).await,
        Route::SetupNeeded | Route::Setup | Route::Login | Route::LoginTotp => {
            Err(ConsoleError::internal())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_by_method_and_path() {
        assert_eq!(route("GET", &["setup"]), Ok(Route::SetupNeeded));
        assert_eq!(route("POST", &["setup"]), Ok(Route::Setup));
        assert_eq!(
            route("DELETE", &["sessions", "abc"]),
            Ok(Route::RevokeSession("abc"))
        );
        assert_eq!(route("GET", &["login"]).map_err(|e| e.status), Err(405));
        assert_eq!(route("GET", &["nope"]).map_err(|e| e.status), Err(404));
        assert_eq!(route("POST", &["settings"]).map_err(|e| e.status), Err(405));
    }
}
