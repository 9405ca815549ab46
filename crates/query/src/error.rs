//! The one place API errors become responses.

use lambda_http::http::header::{CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Response};
use tally_core::auth::AuthError;
use tally_core::filter::FilterError;
use tally_core::range::RangeError;
use tally_core::share::ShareError;
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

impl From<RangeError> for ApiError {
    fn from(e: RangeError) -> Self {
        Self::bad_request(e.code(), e.to_string())
    }
}

impl From<FilterError> for ApiError {
    fn from(e: FilterError) -> Self {
        let code = match e {
            FilterError::UnknownDimension(_) => "unknown_filter_dimension",
            FilterError::Malformed(_) => "malformed_filter",
            FilterError::TooMany => "too_many_filters",
            FilterError::TooComplex(_) => "filter_too_complex",
            FilterError::InvalidPattern(_) => "malformed_filter",
        };
        Self::bad_request(code, e.to_string())
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

/// A 200 JSON response of a typed body.
pub fn typed_response<T: serde::Serialize>(body: &T) -> Response<Body> {
    match serde_json::to_value(body) {
        Ok(value) => json_response(200, &value),
        Err(e) => {
            tracing::error!(error = %e, "response did not serialise");
            error_response(&ApiError::internal())
        }
    }
}

/// A JSON response.
pub fn json_response(status: u16, value: &serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Body::Text(value.to_string()));
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
    json_response(
        e.status,
        &serde_json::json!({"error": {"code": e.code, "message": e.message}}),
    )
}
