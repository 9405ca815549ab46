//! The dashboard page (`/`), served with its security headers.

use lambda_http::http::header::{CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Response};

/// The dashboard page.
pub const DASHBOARD: &str = include_str!("../assets/dashboard.html");

/// The built-in dashboard page.
pub fn dashboard() -> Response<Body> {
    dashboard_response(DASHBOARD.to_owned())
}

/// The dashboard page with its security headers (CSP, nosniff, no referrer).
pub fn dashboard_response(html: String) -> Response<Body> {
    let mut response = Response::new(Body::Text(html));
    let h = response.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}
