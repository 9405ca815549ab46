//! The console's cookies: rendering `Set-Cookie` values and reading a
//! `Cookie` header.
//!
//! `tally_session` holds the session token: `HttpOnly; Secure;
//! SameSite=Strict; Path=/`, 14 days (the session's absolute life).
//! `tally_device` holds a random device id for a year, so a browser that
//! has logged in before is told apart from a guesser ([`super::guess`]).
//! Chromium and Firefox treat `http://localhost` as secure, so `Secure`
//! cookies work in `tally dev`.

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "tally_session";
/// The device cookie's name.
pub const DEVICE_COOKIE: &str = "tally_device";
/// The session cookie's life in seconds (14 days).
pub const SESSION_MAX_AGE: i64 = 14 * 86_400;
/// The device cookie's life in seconds (a year).
pub const DEVICE_MAX_AGE: i64 = 365 * 86_400;

const ATTRIBUTES: &str = "HttpOnly; Secure; SameSite=Strict; Path=/";

/// `Set-Cookie` for a new session.
pub fn session_cookie(token: &str) -> String {
    format!("{SESSION_COOKIE}={token}; {ATTRIBUTES}; Max-Age={SESSION_MAX_AGE}")
}

/// `Set-Cookie` that removes the session cookie.
pub fn clear_session_cookie() -> String {
    format!("{SESSION_COOKIE}=; {ATTRIBUTES}; Max-Age=0")
}

/// `Set-Cookie` for a device id.
pub fn device_cookie(device: &str) -> String {
    format!("{DEVICE_COOKIE}={device}; {ATTRIBUTES}; Max-Age={DEVICE_MAX_AGE}")
}

/// The value of cookie `name` in `Cookie` header values (several headers,
/// or API Gateway's joined list), the first one given. Names match exactly;
/// quotes around a value are removed.
pub fn cookie<'a>(headers: impl IntoIterator<Item = &'a str>, name: &str) -> Option<&'a str> {
    headers
        .into_iter()
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| key.trim() == name)
        .map(|(_, value)| {
            let value = value.trim();
            value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_designed_attributes() {
        assert_eq!(
            session_cookie("tse_abc.0123"),
            "tally_session=tse_abc.0123; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=1209600"
        );
        assert_eq!(
            clear_session_cookie(),
            "tally_session=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0"
        );
        assert!(device_cookie("d").ends_with("Max-Age=31536000"));
    }

    #[test]
    fn reads_cookie_headers() {
        let table: [(&[&str], Option<&str>); 7] = [
            (&[], None),
            (&["tally_session=abc"], Some("abc")),
            (&["a=1; tally_session=abc; b=2"], Some("abc")),
            (&["a=1", "tally_session=\"abc\""], Some("abc")),
            (&["xtally_session=abc"], None),
            (&["tally_session_old=abc; tally_session=new"], Some("new")),
            (&["tally_session"], None),
        ];
        for (headers, expected) in table {
            assert_eq!(
                cookie(headers.iter().copied(), SESSION_COOKIE),
                expected,
                "{headers:?}"
            );
        }
    }
}
