//! The tracker script, compiled into the binary and served with a strong
//! ETag (a hash of its bytes) and a one-hour shared cache lifetime.

use lambda_http::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::{Body, Request, Response};
use std::sync::OnceLock;

/// The tracker as served.
pub const SCRIPT: &str = include_str!("../assets/script.js");

/// The tracker's ETag: a quoted prefix of its SHA-256.
pub fn etag() -> &'static str {
    static ETAG_VALUE: OnceLock<String> = OnceLock::new();
    ETAG_VALUE.get_or_init(|| {
        let digest = ring::digest::digest(&ring::digest::SHA256, SCRIPT.as_bytes());
        format!("\"{}\"", &tally_core::hex::encode(digest.as_ref())[..20])
    })
}

/// Serves the tracker, or 304 when the client's copy is current.
pub fn serve(request: &Request) -> Response<Body> {
    let tag = etag();
    let fresh = request
        .headers()
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag || t.trim() == "*"));
    let mut response = if fresh {
        let mut r = Response::new(Body::Empty);
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let body = if request.method() == "HEAD" {
            Body::Empty
        } else {
            Body::Text(SCRIPT.to_owned())
        };
        Response::new(body)
    };
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/javascript; charset=utf-8"),
    );
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600, stale-while-revalidate=86400"),
    );
    if let Ok(value) = HeaderValue::from_str(tag) {
        headers.insert(ETAG, value);
    }
    response
}
