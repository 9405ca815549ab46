//! The console page (`GET /console`): one self-contained HTML file
//! (`assets/console.html`, inline CSS and JS, no requests but its own API)
//! served with a strict CSP (`tally_lambda::page`). Its one inline
//! `<style>` and one inline `<script>` are allowed by their SHA-256 hashes,
//! nothing else runs.

use lambda_http::{Body, Response};
use std::sync::OnceLock;
use tally_lambda::page::{csp, html_response};

/// Where the page is served.
pub const PATH: &str = "/console";

/// The console page.
pub const CONSOLE: &str = include_str!("../assets/console.html");

/// The built-in console page with its headers.
pub fn console() -> Response<Body> {
    static CSP: OnceLock<String> = OnceLock::new();
    html_response(CONSOLE.to_owned(), CSP.get_or_init(|| csp(CONSOLE)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tally_lambda::page::inline_blocks;

    #[test]
    fn the_page_has_one_script_and_one_style() {
        assert_eq!(inline_blocks(CONSOLE, "script").count(), 1);
        assert_eq!(inline_blocks(CONSOLE, "style").count(), 1);
        assert!(!CONSOLE.contains("<script src"));
        assert!(
            !CONSOLE.contains(" style=\""),
            "inline style attributes are refused by the CSP"
        );
        let response = console();
        assert_eq!(response.status(), 200);
        let csp = response.headers()["content-security-policy"].to_str();
        assert!(csp.is_ok_and(|c| c.starts_with("default-src 'none'")));
    }
}
