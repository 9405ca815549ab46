//! Response helpers: JSON bodies, the one JSON error shape, and CORS.
//!
//! Ingest is called from every site's pages, so it answers any origin
//! (`Access-Control-Allow-Origin: *`) and never allows credentials. Its
//! JSON and text answers say `X-Content-Type-Options: nosniff`, so no
//! browser reads them as anything but their declared type.

use lambda_http::http::header::{CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Response};

/// A JSON response.
pub fn json(status: u16, value: &serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Body::Text(value.to_string()));
    *response.status_mut() = lambda_http::http::StatusCode::from_u16(status)
        .unwrap_or(lambda_http::http::StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    nosniff(response)
}

/// Adds `X-Content-Type-Options: nosniff`.
pub fn nosniff(mut response: Response<Body>) -> Response<Body> {
    response.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// The JSON error `{"error": {"code", "message"}}`.
pub fn error(status: u16, code: &str, message: &str) -> Response<Body> {
    json(
        status,
        &serde_json::json!({"error": {"code": code, "message": message}}),
    )
}

/// Adds the ingest CORS headers to a response.
pub fn cors(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert("access-control-allow-origin", HeaderValue::from_static("*"));
    headers.insert("vary", HeaderValue::from_static("Origin"));
    response
}

/// The answer to a CORS preflight.
pub fn preflight() -> Response<Body> {
    let mut response = Response::new(Body::Empty);
    *response.status_mut() = lambda_http::http::StatusCode::NO_CONTENT;
    let headers = response.headers_mut();
    headers.insert(
        "access-control-allow-methods",
        HeaderValue::from_static("POST, OPTIONS"),
    );
    headers.insert(
        "access-control-allow-headers",
        HeaderValue::from_static("Content-Type"),
    );
    headers.insert("access-control-max-age", HeaderValue::from_static("86400"));
    response
}
