//! What the HTTP functions read off a request about its client. Used to
//! derive hashes, never stored or logged.

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

/// The client address: CloudFront's viewer address when trusted, else the
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

/// A header's value as text (`None` when absent or not visible ASCII).
pub fn header<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.headers().get(name).and_then(|v| v.to_str().ok())
}
