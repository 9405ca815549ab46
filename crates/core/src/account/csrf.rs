//! The CSRF and origin check of state-changing requests made with the
//! session cookie.
//!
//! A POST, PUT, PATCH or DELETE authenticated by the cookie must carry
//! `x-csrf-token` equal to the session's CSRF value (compared in constant
//! time), and an `Origin` header, when present, must name the `Host` the
//! request was sent to. Requests with a bearer key carry no ambient
//! credential and are not checked. `SameSite=Strict` already keeps the
//! cookie off cross-site requests in current browsers; this is the second
//! lock.

/// The header carrying the CSRF value.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// Why a request failed the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CsrfError {
    /// No `x-csrf-token`, or not the session's.
    #[error("missing or wrong x-csrf-token")]
    Token,
    /// `Origin` names another host.
    #[error("the request comes from another origin")]
    Origin,
}

/// Whether a method changes state (and so is checked).
pub fn is_state_changing(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH" | "DELETE")
}

/// The host (with port) an `Origin` header names; `None` for `null` or a
/// malformed origin.
pub fn origin_host(origin: &str) -> Option<&str> {
    let (scheme, rest) = origin.trim().split_once("://")?;
    if !matches!(scheme, "http" | "https") || rest.is_empty() || rest.contains(['/', '@']) {
        return None;
    }
    Some(rest)
}

/// Checks a cookie-authenticated request: `Ok` for a safe method, or for a
/// state-changing one whose token is the session's and whose `Origin`, if
/// any, names `host`.
pub fn check(
    method: &str,
    token: Option<&str>,
    session_csrf: &str,
    origin: Option<&str>,
    host: Option<&str>,
) -> Result<(), CsrfError> {
    if !is_state_changing(method) {
        return Ok(());
    }
    if let Some(origin) = origin {
        let same = match (origin_host(origin), host) {
            (Some(from), Some(host)) => from.eq_ignore_ascii_case(host.trim()),
            _ => false,
        };
        if !same {
            return Err(CsrfError::Origin);
        }
    }
    match token {
        Some(token)
            if !session_csrf.is_empty()
                && crate::ingest::salt::constant_time_eq(
                    token.trim().as_bytes(),
                    session_csrf.as_bytes(),
                ) =>
        {
            Ok(())
        }
        _ => Err(CsrfError::Token),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSRF: &str = "0123456789abcdef0123456789abcdef";
    const HOST: Option<&str> = Some("tally.example.com");

    #[test]
    fn the_rules() {
        type Case<'a> = (
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
            Result<(), CsrfError>,
        );
        let cases: [Case; 11] = [
            ("GET", None, None, Ok(())),
            ("HEAD", None, Some("https://evil.example"), Ok(())),
            ("POST", Some(CSRF), None, Ok(())),
            (
                "POST",
                Some(CSRF),
                Some("https://tally.example.com"),
                Ok(()),
            ),
            (
                "DELETE",
                Some(CSRF),
                Some("https://TALLY.example.com"),
                Ok(()),
            ),
            ("POST", None, None, Err(CsrfError::Token)),
            ("PUT", Some("0123"), None, Err(CsrfError::Token)),
            ("PATCH", Some(""), None, Err(CsrfError::Token)),
            (
                "POST",
                Some(CSRF),
                Some("https://evil.example"),
                Err(CsrfError::Origin),
            ),
            ("POST", Some(CSRF), Some("null"), Err(CsrfError::Origin)),
            (
                "POST",
                Some(CSRF),
                Some("https://tally.example.com.evil.example"),
                Err(CsrfError::Origin),
            ),
        ];
        for (method, token, origin, expected) in cases {
            assert_eq!(
                check(method, token, CSRF, origin, HOST),
                expected,
                "{method} {token:?} {origin:?}"
            );
        }
        // A session without a CSRF value never passes.
        assert_eq!(
            check("POST", Some(""), "", None, HOST),
            Err(CsrfError::Token)
        );
        // An Origin without a Host to compare with is refused.
        assert_eq!(
            check("POST", Some(CSRF), CSRF, Some("https://a.example"), None),
            Err(CsrfError::Origin)
        );
    }

    #[test]
    fn origin_hosts() {
        assert_eq!(origin_host("http://127.0.0.1:8787"), Some("127.0.0.1:8787"));
        assert_eq!(origin_host("https://a.example"), Some("a.example"));
        assert_eq!(origin_host("file://"), None);
        assert_eq!(origin_host("https://a.example/path"), None);
        assert_eq!(origin_host("https://user@a.example"), None);
    }
}
