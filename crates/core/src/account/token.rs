//! The console's tokens and ids, shaped like API keys ([`crate::account::auth`]):
//! a prefix, 40 lower-case hex characters (160 random bits) and, for most,
//! a dot and a non-secret suffix that says where to look the token up.
//! Only `sha256(token)` is stored ([`crate::account::auth::hash_key`]).
//!
//! | token | form | stored at |
//! | --- | --- | --- |
//! | session (cookie `tally_session`) | `tse_{40 hex}.{uid}` | `USER#{uid}` / `SESSION#{hash}` |
//! | 2FA challenge (between password and code) | `tc_{40 hex}.{uid}` | `USER#{uid}` / `PENDING#{hash}` |
//! | invite | `ti_{40 hex}.{site}` | `SITE#{site}` / `INVITE#{hash}` |
//! | setup (first owner) | `tsu_{40 hex}` | `INSTANCE` / `SETUP#{hash}` |
//! | password reset | `tr_{40 hex}.{uid}` | `USER#{uid}` / `RESET#{hash}` |
//!
//! A user id is 16 random lower-case hex characters; a device id (cookie
//! `tally_device`) and a session's CSRF value are 32.

use crate::hex;

/// Prefix of a session token.
pub const SESSION_PREFIX: &str = "tse_";
/// Prefix of a 2FA challenge.
pub const CHALLENGE_PREFIX: &str = "tc_";
/// Prefix of an invite.
pub const INVITE_PREFIX: &str = "ti_";
/// Prefix of a setup token.
pub const SETUP_PREFIX: &str = "tsu_";
/// Prefix of a password reset token.
pub const RESET_PREFIX: &str = "tr_";
/// Hex characters of a token's random part.
const RANDOM_HEX: usize = 40;
/// Hex characters of a user id.
pub const USER_ID_HEX: usize = 16;
/// Hex characters of a device id and of a CSRF value.
pub const DEVICE_HEX: usize = 32;
/// Hex characters of a session's public id (its hash's start).
pub const SESSION_ID_HEX: usize = 12;

fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A user id from 8 random bytes.
pub fn user_id_from_bytes(bytes: &[u8; 8]) -> String {
    hex::encode(bytes)
}

/// Whether text is a user id.
pub fn valid_user_id(text: &str) -> bool {
    is_lower_hex(text, USER_ID_HEX)
}

/// A device id, or a CSRF value, from 16 random bytes.
pub fn device_id_from_bytes(bytes: &[u8; 16]) -> String {
    hex::encode(bytes)
}

/// Whether text is a device id (or a CSRF value).
pub fn valid_device_id(text: &str) -> bool {
    is_lower_hex(text, DEVICE_HEX)
}

/// A session token of user `uid` from 20 random bytes.
pub fn session_token(uid: &str, bytes: &[u8; 20]) -> String {
    crate::account::auth::credential_from_bytes(SESSION_PREFIX, uid, bytes)
}

/// The user of a well-formed session token.
pub fn session_user(token: &str) -> Option<&str> {
    suffixed(SESSION_PREFIX, token).filter(|uid| valid_user_id(uid))
}

/// A 2FA challenge of user `uid` from 20 random bytes.
pub fn challenge_token(uid: &str, bytes: &[u8; 20]) -> String {
    crate::account::auth::credential_from_bytes(CHALLENGE_PREFIX, uid, bytes)
}

/// The user of a well-formed 2FA challenge.
pub fn challenge_user(token: &str) -> Option<&str> {
    suffixed(CHALLENGE_PREFIX, token).filter(|uid| valid_user_id(uid))
}

/// An invite to `site` from 20 random bytes.
pub fn invite_token(site: &str, bytes: &[u8; 20]) -> String {
    crate::account::auth::credential_from_bytes(INVITE_PREFIX, site, bytes)
}

/// The site of a well-formed invite.
pub fn invite_site(token: &str) -> Option<&str> {
    crate::account::auth::credential_site(INVITE_PREFIX, token)
}

/// A password reset token of user `uid` from 20 random bytes.
pub fn reset_token(uid: &str, bytes: &[u8; 20]) -> String {
    crate::account::auth::credential_from_bytes(RESET_PREFIX, uid, bytes)
}

/// The user of a well-formed password reset token.
pub fn reset_user(token: &str) -> Option<&str> {
    suffixed(RESET_PREFIX, token).filter(|uid| valid_user_id(uid))
}

/// A setup token from 20 random bytes.
pub fn setup_token(bytes: &[u8; 20]) -> String {
    format!("{SETUP_PREFIX}{}", hex::encode(bytes))
}

/// Whether text has the shape of a setup token.
pub fn is_setup_token(token: &str) -> bool {
    token
        .strip_prefix(SETUP_PREFIX)
        .is_some_and(|random| is_lower_hex(random, RANDOM_HEX))
}

/// The suffix after `{prefix}{40 hex}[{tag}].` ([`crate::account::tag`]).
fn suffixed<'a>(prefix: &str, token: &'a str) -> Option<&'a str> {
    crate::account::auth::credential_suffix(prefix, token)
}

/// The stored hash of any token: hex SHA-256.
pub fn hash_token(token: &str) -> String {
    crate::account::auth::hash_key(token)
}

/// A session's public id, as listed and revoked: the first
/// [`SESSION_ID_HEX`] characters of its token's hash.
pub fn session_id(token_hash: &str) -> &str {
    token_hash.get(..SESSION_ID_HEX).unwrap_or(token_hash)
}

/// Whether text has the shape of a session's public id.
pub fn valid_session_id(text: &str) -> bool {
    is_lower_hex(text, SESSION_ID_HEX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tokens_carry_their_suffix() {
        let uid = user_id_from_bytes(&[0xab; 8]);
        assert_eq!(uid, "abababababababab");
        assert!(valid_user_id(&uid));
        let session = session_token(&uid, &[1; 20]);
        assert!(session.starts_with("tse_0101"));
        assert_eq!(session_user(&session), Some(uid.as_str()));
        // Never taken for a shared link's token (`ts_…{site}`).
        assert_eq!(crate::account::share::token_site(&session), None);
        assert_eq!(crate::account::auth::key_site(&session), None);
        assert_eq!(challenge_user(&session), None);
        let challenge = challenge_token(&uid, &[2; 20]);
        assert_eq!(challenge_user(&challenge), Some(uid.as_str()));
        assert_eq!(session_user(&challenge), None);
        let invite = invite_token("example.com", &[3; 20]);
        assert_eq!(invite_site(&invite), Some("example.com"));
        let setup = setup_token(&[4; 20]);
        assert!(is_setup_token(&setup));
        assert!(!is_setup_token(&session));
        assert_eq!(session_user(&setup), None);
        let reset = reset_token(&uid, &[5; 20]);
        assert!(reset.starts_with("tr_0505"));
        assert_eq!(reset_user(&reset), Some(uid.as_str()));
        assert_eq!(session_user(&reset), None);
        assert_eq!(challenge_user(&reset), None);
        assert_eq!(reset_user(&session), None);
        assert_eq!(reset_user(&challenge), None);
        assert_eq!(crate::account::auth::key_site(&reset), None);
        assert_eq!(crate::account::share::token_site(&reset), None);
    }

    #[test]
    fn malformed_tokens_are_refused() {
        let uid = "0123456789abcdef";
        for bad in [
            String::new(),
            "tse_".into(),
            format!("tse_{}.{uid}", "0".repeat(39)),
            format!("tse_{}.{uid}", "G".repeat(40)),
            format!("tse_{}.{uid}", "A".repeat(40)),
            format!("tse_{}{uid}", "0".repeat(40)),
            format!("tse_{}.{}", "0".repeat(40), "0123"),
            format!("tse_{}.{}", "0".repeat(40), "0123456789ABCDEF"),
            format!("tse_{}.{uid}.x", "0".repeat(40)),
        ] {
            assert_eq!(session_user(&bad), None, "{bad}");
        }
        assert!(!is_setup_token(&format!("tsu_{}", "0".repeat(41))));
        assert!(!is_setup_token("tsu_"));
    }

    #[test]
    fn session_ids_are_hash_prefixes() {
        let hash = hash_token("ts_x");
        assert_eq!(session_id(&hash).len(), SESSION_ID_HEX);
        assert!(valid_session_id(session_id(&hash)));
        assert!(!valid_session_id("0123"));
    }

    proptest! {
        #[test]
        fn every_session_token_parses(uid in any::<[u8; 8]>(), random in any::<[u8; 20]>()) {
            let uid = user_id_from_bytes(&uid);
            let token = session_token(&uid, &random);
            prop_assert_eq!(session_user(&token), Some(uid.as_str()));
            prop_assert_eq!(hash_token(&token).len(), 64);
        }

        #[test]
        fn no_text_panics(text in ".{0,80}") {
            let _ = session_user(&text);
            let _ = challenge_user(&text);
            let _ = invite_site(&text);
            let _ = is_setup_token(&text);
            let _ = reset_user(&text);
        }
    }
}
