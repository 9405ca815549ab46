//! The one place API errors become responses, and JSON bodies become
//! responses: every body is a typed `Serialize` value ([`ErrorBody`],
//! [`PlausibleErrorBody`], the doors' bodies from `tally_core::engine::query`).

use lambda_http::http::header::{CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Response};
use serde::Serialize;
use tally_core::account::auth::AuthError;
use tally_core::account::share::ShareError;
use tally_core::engine::query::ParseError;
use tally_core::engine::query::tally::body::json_text;
use tally_store::StoreError;

/// An API error: status, machine code, human message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// Machine-readable code.
    pub code: &'static str,
    /// Human-readable message.
    pub message: String,
}

impl ApiError {
    /// A 400 with a code.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: 400,
            code,
            message: message.into(),
        }
    }

    /// A 500 that says no more.
    pub fn internal() -> Self {
        Self {
            status: 500,
            code: "internal_error",
            message: "internal error".into(),
        }
    }

    /// A 503: the request's folds took longer than `budget`.
    pub fn query_timeout(budget: std::time::Duration) -> Self {
        Self {
            status: 503,
            code: "query_timeout",
            message: format!(
                "the query took longer than {} s to count; narrow the range or the filters",
                budget.as_secs()
            ),
        }
    }

    /// A 404.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: 404,
            code,
            message: message.into(),
        }
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        Self {
            status: e.status(),
            code: e.code(),
            message: e.to_string(),
        }
    }
}

impl From<ShareError> for ApiError {
    fn from(e: ShareError) -> Self {
        let status = match e {
            ShareError::BadPassword | ShareError::BadExpiry | ShareError::BadLabel => 400,
            _ => 401,
        };
        Self {
            status,
            code: e.code(),
            message: e.to_string(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "store failed");
        if e.is_transient() {
            Self {
                status: 503,
                code: "store_unavailable",
                message: "the store is unavailable, retry later".into(),
            }
        } else {
            Self::internal()
        }
    }
}

pub use tally_lambda::error_body::{ErrorBody, ErrorDetail};

/// An error as Plausible's Stats API writes it: `{"error": "…"}`.
#[derive(Debug, Clone, Serialize)]
pub struct PlausibleErrorBody {
    /// The text.
    pub error: String,
}

impl From<ParseError> for ApiError {
    fn from(e: ParseError) -> Self {
        Self::bad_request(e.code, e.message)
    }
}

/// A 200 JSON response of a typed body.
pub fn typed_response<T: Serialize>(body: &T) -> Response<Body> {
    json_response(200, body)
}

/// A JSON response of a typed body, written through `serde_json::Value`
/// (every object's keys in alphabetical order).
pub fn json_response<T: Serialize>(status: u16, body: &T) -> Response<Body> {
    let (status, text) = match json_text(body) {
        Ok(text) => (status, text),
        Err(e) => {
            tracing::error!(error = %e, "response did not serialise");
            let e = ApiError::internal();
            let body = ErrorBody::new(e.code, &e.message);
            (e.status, json_text(&body).unwrap_or_default())
        }
    };
    let mut response = Response::new(Body::Text(text));
    *response.status_mut() = lambda_http::http::StatusCode::from_u16(status)
        .unwrap_or(lambda_http::http::StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
        .headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-store"));
    response
}

/// The response of an error: `{"error": {"code", "message"}}`.
pub fn error_response(e: &ApiError) -> Response<Body> {
    json_response(e.status, &ErrorBody::new(e.code, &e.message))
}

/// The response of an error of Plausible's Stats API: `{"error": "…"}`. A
/// key of another site is, as Plausible says, an invalid key or site id
/// (401), like an unknown key.
pub fn plausible_error_response(e: &ApiError) -> Response<Body> {
    let (status, error) = match e.status {
        401 | 403 if e.code != "missing_key" => (
            401,
            "Invalid API key or site ID. Please make sure you're using a valid API key with access to the site you've requested.".to_owned(),
        ),
        status => (status, e.message.clone()),
    };
    json_response(status, &PlausibleErrorBody { error })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn body(r: &Response<Body>) -> serde_json::Value {
        serde_json::from_slice(r.body().as_ref()).unwrap()
    }

    #[test]
    fn errors_are_typed_bodies() {
        let r = error_response(&ApiError::bad_request(
            "unknown_metric",
            "unknown metric \"x\"",
        ));
        assert_eq!(r.status(), 400);
        assert_eq!(
            r.body().as_ref(),
            br#"{"error":{"code":"unknown_metric","message":"unknown metric \"x\""}}"#
        );
        assert_eq!(r.headers()["content-type"], "application/json");
        assert_eq!(r.headers()["cache-control"], "no-store");
        let parsed: ApiError = ParseError::new("invalid_date", "bad").into();
        assert_eq!(parsed, ApiError::bad_request("invalid_date", "bad"));
    }

    #[test]
    fn plausible_errors_say_what_plausible_says() {
        // A key of another site is, as Plausible says, an invalid key.
        let forbidden = ApiError::from(AuthError::Forbidden);
        let r = plausible_error_response(&forbidden);
        assert_eq!(r.status(), 401);
        assert!(
            body(&r)["error"]
                .as_str()
                .unwrap()
                .starts_with("Invalid API key or site ID.")
        );
        let missing = ApiError {
            status: 401,
            code: "missing_key",
            message: "Missing API key.".into(),
        };
        let r = plausible_error_response(&missing);
        assert_eq!(
            (r.status().as_u16(), body(&r)),
            (401, serde_json::json!({"error": "Missing API key."}))
        );
        let r = plausible_error_response(&ApiError::bad_request("invalid_query", "#: nope"));
        assert_eq!(
            (r.status().as_u16(), body(&r)),
            (400, serde_json::json!({"error": "#: nope"}))
        );
    }
}
