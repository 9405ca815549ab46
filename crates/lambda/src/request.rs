//! What the HTTP functions read off a request about its client. Used to
//! derive hashes, never stored or logged.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

/// The client address: CloudFront's viewer address when trusted (see
/// [`OriginVerify`]), else the
/// API Gateway source IP, else the first `X-Forwarded-For` entry (local runs).
/// Used to derive hashes and never stored or logged.
pub fn client_ip(request: &Request, behind_cloudfront: bool) -> String {
    let headers = request.headers();
    let viewer = headers
        .get("cloudfront-viewer-address")
        .and_then(|v| v.to_str().ok())
        .filter(|_| behind_cloudfront);
    // "ip:port", with an IPv6 address itself full of colons.
    if let Some((ip, _port)) = viewer.and_then(|addr| addr.rsplit_once(':')) {
        return ip.trim_matches(|c| c == '[' || c == ']').to_owned();
    }
    if let Some(RequestContext::ApiGatewayV2(ctx)) = request.request_context_ref()
        && let Some(ip) = ctx.http.source_ip.as_deref().filter(|ip| !ip.is_empty())
    {
        return ip.to_owned();
    }
    headers
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .map(|ip| ip.trim().to_owned())
        .unwrap_or_default()
}

/// The header the deployment's CloudFront adds to every origin request
/// (an origin custom header), holding the origin secret.
pub const ORIGIN_VERIFY_HEADER: &str = "x-tally-origin-verify";

/// Shortest origin secret accepted.
pub const MIN_ORIGIN_SECRET: usize = 32;

/// The proof that a request came through the deployment's own CloudFront:
/// its `CloudFront-Viewer-*` headers are trusted only on a request whose
/// [`ORIGIN_VERIFY_HEADER`] holds the origin secret (their SHA-256
/// digests compared, so the time a comparison takes says nothing about the
/// secret). Anyone who reaches the origin another way (its custom domain,
/// its endpoint) cannot send that header, so cannot pose as a viewer.
#[derive(Clone)]
pub struct OriginVerify {
    digest: Vec<u8>,
}

fn sha256(bytes: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .to_vec()
}

impl std::fmt::Debug for OriginVerify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OriginVerify(<redacted>)")
    }
}

impl OriginVerify {
    /// The check for `secret` (at least [`MIN_ORIGIN_SECRET`] characters,
    /// else `None`).
    pub fn new(secret: &str) -> Option<Self> {
        (secret.len() >= MIN_ORIGIN_SECRET).then(|| Self {
            digest: sha256(secret.as_bytes()),
        })
    }

    /// The check for `secret` ([`crate::secrets::origin`]) when
    /// `TALLY_BEHIND_CLOUDFRONT=1`: `None` when not behind CloudFront, or
    /// (with a warning) when the secret is missing or short: then no
    /// viewer header is ever trusted.
    pub fn configured(secret: Option<&str>) -> Option<Self> {
        let behind = matches!(
            std::env::var("TALLY_BEHIND_CLOUDFRONT").as_deref(),
            Ok("1" | "true" | "yes")
        );
        if !behind {
            return None;
        }
        let verify = Self::new(secret.unwrap_or_default());
        if verify.is_none() {
            tracing::warn!(
                "TALLY_BEHIND_CLOUDFRONT is set without a TALLY_ORIGIN_SECRET of {MIN_ORIGIN_SECRET} characters: CloudFront viewer headers are not trusted"
            );
        }
        verify
    }

    /// Whether `request` carries the origin secret.
    pub fn holds(&self, request: &Request) -> bool {
        request
            .headers()
            .get(ORIGIN_VERIFY_HEADER)
            .is_some_and(|v| sha256(v.as_bytes()) == self.digest)
    }
}

/// A header's value as text (`None` when absent or not visible ASCII).
pub fn header<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.headers().get(name).and_then(|v| v.to_str().ok())
}
