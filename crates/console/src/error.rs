//! The one place console errors and bodies become responses, in the shape
//! of Tally's other APIs: `{"error": {"code", "message"}}` with a status,
//! every body a typed `Serialize` value.

use lambda_http::http::StatusCode;
use lambda_http::http::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER, SET_COOKIE};
use lambda_http::{Body, Response};
use serde::Serialize;
use tally_core::account::csrf::CsrfError;
use tally_core::account::password::PasswordError;
use tally_store::StoreError;

/// A console error: status, machine code, human message, and for a 429
/// the seconds to wait.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ConsoleError {
    /// HTTP status.
    pub status: u16,
    /// Machine-readable code.
    pub code: &'static str,
    /// Human-readable message.
    pub message: String,
    /// Seconds to wait (`retry-after`), for a 429.
    pub retry_after: Option<u64>,
}

impl ConsoleError {
    /// An error with a status and a code.
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// A 400.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(400, code, message)
    }

    /// 401: no live session.
    pub fn not_signed_in() -> Self {
        Self::new(401, "not_signed_in", "sign in first")
    }

    /// 403: the role does not allow it.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "forbidden", message)
    }

    /// 403: 2FA must be turned on first.
    pub fn totp_required() -> Self {
        Self::new(
            403,
            "totp_required",
            "this instance requires two-factor authentication: set it up first",
        )
    }

    /// 404.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(404, code, message)
    }

    /// 429 with the seconds to wait.
    pub fn too_many_attempts(retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(
                429,
                "too_many_attempts",
                format!("too many failed attempts; retry in {retry_after} s"),
            )
        }
    }

    /// A 500 that says no more.
    pub fn internal() -> Self {
        Self::new(500, "internal_error", "internal error")
    }
}

impl From<StoreError> for ConsoleError {
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "store failed");
        if e.is_transient() {
            Self::new(
                503,
                "store_unavailable",
                "the store is unavailable, retry later",
            )
        } else {
            Self::internal()
        }
    }
}

impl From<tally_core::account::caps::CapReached> for ConsoleError {
    fn from(e: tally_core::account::caps::CapReached) -> Self {
        Self::new(409, e.code(), e.to_string())
    }
}

impl From<CsrfError> for ConsoleError {
    fn from(e: CsrfError) -> Self {
        Self::new(403, "csrf", e.to_string())
    }
}

impl From<PasswordError> for ConsoleError {
    fn from(e: PasswordError) -> Self {
        match e {
            PasswordError::Hash => Self::internal(),
            _ => Self::bad_request(e.code(), e.to_string()),
        }
    }
}

pub use tally_lambda::error_body::{ErrorBody, ErrorDetail};

/// A JSON response of a typed body, never cached.
pub fn json_response<T: Serialize>(status: u16, body: &T) -> Response<Body> {
    let (status, text) = match serde_json::to_string(body) {
        Ok(text) => (status, text),
        Err(e) => {
            tracing::error!(error = %e, "response did not serialise");
            let text = r#"{"error":{"code":"internal_error","message":"internal error"}}"#;
            (500, text.to_owned())
        }
    };
    let mut response = Response::new(Body::Text(text));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert("cache-control", HeaderValue::from_static("no-store"));
    response
}

/// Adds a `Set-Cookie` header.
pub fn with_cookie(mut response: Response<Body>, cookie: &str) -> Response<Body> {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(SET_COOKIE, value);
    }
    response
}

/// The response of an error.
pub fn error_response(e: &ConsoleError) -> Response<Body> {
    let body = ErrorBody::new(e.code, &e.message);
    let mut response = json_response(e.status, &body);
    if let Some(seconds) = e.retry_after
        && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
    {
        response.headers_mut().insert(RETRY_AFTER, value);
    }
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_typed_bodies() {
        let r = error_response(&ConsoleError::too_many_attempts(42));
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "42");
        assert_eq!(r.headers()["cache-control"], "no-store");
        let body: serde_json::Value = serde_json::from_slice(r.body().as_ref()).unwrap();
        assert_eq!(body["error"]["code"], "too_many_attempts");
        let r = error_response(&ConsoleError::forbidden("no"));
        assert_eq!(
            r.body().as_ref(),
            br#"{"error":{"code":"forbidden","message":"no"}}"#
        );
    }
}
