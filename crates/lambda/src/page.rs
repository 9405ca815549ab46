//! The HTML pages the HTTP functions serve (the dashboard, the console):
//! one self-contained file each, served with a strict Content Security
//! Policy. Every inline `<style>` and `<script>` block is allowed by its
//! SHA-256 hash and nothing else runs: no `'unsafe-inline'`, no other
//! origin, images from `data:` only, fetches to the page's own origin.

use lambda_http::http::header::{CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Response};

/// `html` with its security headers: the CSP ([`csp`]), no caching without
/// revalidation, no MIME sniffing, no referrer, no framing.
pub fn html_response(html: String, csp: &str) -> Response<Body> {
    let mut response = Response::new(Body::Text(html));
    let h = response.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(csp) {
        h.insert("content-security-policy", value);
    }
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    response
}

/// The CSP of a page: its inline `<script>` and `<style>` blocks by hash,
/// same-origin fetches, images from `data:` only, no frames, no plugins.
pub fn csp(html: &str) -> String {
    let hashes = |tag: &str| -> String {
        inline_blocks(html, tag)
            .map(|text| format!(" 'sha256-{}'", base64(sha256(text.as_bytes()).as_ref())))
            .collect()
    };
    format!(
        "default-src 'none'; script-src{}; style-src{}; img-src data:; connect-src 'self'; \
         form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        hashes("script"),
        hashes("style")
    )
}

fn sha256(bytes: &[u8]) -> ring::digest::Digest {
    ring::digest::digest(&ring::digest::SHA256, bytes)
}

/// The texts of `<tag>…</tag>` blocks (exactly `<tag>`, no attributes).
pub fn inline_blocks<'a>(html: &'a str, tag: &str) -> impl Iterator<Item = &'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut rest = html;
    std::iter::from_fn(move || {
        let start = rest.find(&open)? + open.len();
        let len = rest[start..].find(&close)?;
        let text = &rest[start..start + len];
        rest = &rest[start + len + close.len()..];
        Some(text)
    })
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
    }

    #[test]
    fn csp_hashes_each_inline_block() {
        let html = "<style>a{}</style><script>1</script><script>2</script>";
        let csp = csp(html);
        let h = |t: &str| format!("'sha256-{}'", base64(sha256(t.as_bytes()).as_ref()));
        assert!(
            csp.contains(&format!("script-src {} {};", h("1"), h("2"))),
            "{csp}"
        );
        assert!(csp.contains(&format!("style-src {};", h("a{}"))), "{csp}");
        assert!(!csp.contains("unsafe-inline"));
    }
}
