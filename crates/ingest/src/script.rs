//! The tracker scripts, compiled into the binary and served with a strong
//! ETag (a hash of their bytes) and a one-hour shared cache lifetime:
//! Tally's own (`/script.js`) and its Plausible-compatible mode
//! (`/js/script.js`, `/js/script.<extensions>.js`, `/js/plausible.js`),
//! which reads its extensions from its own file name, and the opt-in Web
//! Vitals module (`/vitals.js`) whose values Tally's tracker adds to its
//! leave beacon, and the opt-in form-submissions module (`/forms.js`),
//! which sends one `Form: Submission` event per form submission through
//! the tracker's `tally.track`, and the opt-in affiliate module
//! (`/affiliate.js`), which keeps a link's affiliate slug, and only it, in
//! the site's first-party storage for the site's checkout and sends nothing.

use lambda_http::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::{Body, Request, Response};
use std::sync::OnceLock;

/// The tracker as served.
pub const SCRIPT: &str = include_str!("../assets/script.js");
/// The tracker in its Plausible-compatible mode, as served.
pub const PLAUSIBLE_SCRIPT: &str = include_str!("../assets/plausible.js");

/// The opt-in Web Vitals module as served (`assets/vitals.src.js` is its
/// commented copy).
pub const VITALS_SCRIPT: &str = include_str!("../assets/vitals.js");

/// The opt-in form-submissions module as served (`assets/forms.src.js` is
/// its commented copy).
pub const FORMS_SCRIPT: &str = include_str!("../assets/forms.js");

/// The opt-in affiliate module as served (`assets/affiliate.src.js` is its
/// commented copy).
pub const AFFILIATE_SCRIPT: &str = include_str!("../assets/affiliate.js");

/// The tracker's ETag: a quoted prefix of its SHA-256.
pub fn etag() -> &'static str {
    static ETAG_VALUE: OnceLock<String> = OnceLock::new();
    ETAG_VALUE.get_or_init(|| tag_of(SCRIPT))
}

/// The Plausible-mode tracker's ETag.
pub fn plausible_etag() -> &'static str {
    static ETAG_VALUE: OnceLock<String> = OnceLock::new();
    ETAG_VALUE.get_or_init(|| tag_of(PLAUSIBLE_SCRIPT))
}

fn tag_of(script: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, script.as_bytes());
    format!("\"{}\"", &tally_core::hex::encode(digest.as_ref())[..20])
}

/// The Web Vitals module's ETag.
pub fn vitals_etag() -> &'static str {
    static ETAG_VALUE: OnceLock<String> = OnceLock::new();
    ETAG_VALUE.get_or_init(|| tag_of(VITALS_SCRIPT))
}

/// The form-submissions module's ETag.
pub fn forms_etag() -> &'static str {
    static ETAG_VALUE: OnceLock<String> = OnceLock::new();
    ETAG_VALUE.get_or_init(|| tag_of(FORMS_SCRIPT))
}

/// The affiliate module's ETag.
pub fn affiliate_etag() -> &'static str {
    static ETAG_VALUE: OnceLock<String> = OnceLock::new();
    ETAG_VALUE.get_or_init(|| tag_of(AFFILIATE_SCRIPT))
}

/// Whether a path under `/js/` names a Plausible script this serves:
/// `script.js`, `script.<extension>[.<extension>…].js` (extensions of
/// lower-case letters and dashes), or `plausible.js`.
pub fn is_plausible_script(path: &str) -> bool {
    let Some(file) = path.strip_prefix("/js/") else {
        return false;
    };
    if file == "plausible.js" {
        return true;
    }
    let Some(middle) = file
        .strip_prefix("script")
        .and_then(|f| f.strip_suffix(".js"))
    else {
        return false;
    };
    middle.is_empty()
        || middle.strip_prefix('.').is_some_and(|exts| {
            exts.split('.')
                .all(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'))
        })
}

/// Serves Tally's tracker, or 304 when the client's copy is current.
pub fn serve(request: &Request) -> Response<Body> {
    serve_script(request, SCRIPT, etag())
}

/// Serves the Web Vitals module.
pub fn serve_vitals(request: &Request) -> Response<Body> {
    serve_script(request, VITALS_SCRIPT, vitals_etag())
}

/// Serves the form-submissions module.
pub fn serve_forms(request: &Request) -> Response<Body> {
    serve_script(request, FORMS_SCRIPT, forms_etag())
}

/// Serves the affiliate module.
pub fn serve_affiliate(request: &Request) -> Response<Body> {
    serve_script(request, AFFILIATE_SCRIPT, affiliate_etag())
}

/// Serves the Plausible-compatible tracker.
pub fn serve_plausible(request: &Request) -> Response<Body> {
    serve_script(request, PLAUSIBLE_SCRIPT, plausible_etag())
}

fn serve_script(request: &Request, script: &str, tag: &str) -> Response<Body> {
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
            Body::Text(script.to_owned())
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
