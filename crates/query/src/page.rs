//! The dashboard page (`/`): one self-contained HTML file
//! (`assets/dashboard.html`, inline CSS and JS) served with the strict CSP
//! of `tally_lambda::page`: its inline `<style>` and `<script>` are allowed
//! by their SHA-256 hashes, nothing else runs (no `'unsafe-inline'`, so no
//! inline event handlers or `style` attributes in its markup).

use lambda_http::{Body, Response};
use std::sync::OnceLock;
use tally_lambda::page::{csp, html_response};

/// The dashboard page.
pub const DASHBOARD: &str = include_str!("../assets/dashboard.html");

/// The built-in dashboard page.
pub fn dashboard() -> Response<Body> {
    static CSP: OnceLock<String> = OnceLock::new();
    html_response(DASHBOARD.to_owned(), CSP.get_or_init(|| csp(DASHBOARD)))
}

/// A dashboard page (`html`, e.g. read from disk by `tally dev`) with its
/// security headers, its CSP computed from it.
pub fn dashboard_response(html: String) -> Response<Body> {
    let csp = csp(&html);
    html_response(html, &csp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tally_lambda::page::inline_blocks;

    #[test]
    fn the_dashboard_runs_only_its_own_hashed_blocks() {
        assert_eq!(inline_blocks(DASHBOARD, "script").count(), 1);
        assert_eq!(inline_blocks(DASHBOARD, "style").count(), 1);
        assert!(!DASHBOARD.contains("<script src"));
        let markup = DASHBOARD.replace("<noscript><p style=", "");
        assert!(
            !markup.contains(" style=\""),
            "inline style attributes are refused by the CSP"
        );
        let response = dashboard();
        let csp = response.headers()["content-security-policy"].to_str();
        assert!(
            csp.is_ok_and(|c| c.starts_with("default-src 'none'") && !c.contains("unsafe-inline"))
        );
    }
}
