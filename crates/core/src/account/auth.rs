//! API keys: their format, their stored hash, and reading a bearer header.
//!
//! A key is `tk_`, 40 lower-case hex characters (160 random bits), a dot and
//! the site id it belongs to: `tk_…40 hex….example.com`. The site id is not
//! secret; carrying it lets a key used on another site be told apart (403)
//! from a wrong key (401) without any index. Only `sha256(key)` is stored
//! (`SITE#{site}` / `KEY#{hash}`), so a table dump yields no usable key; the
//! key is shown once, at creation. A key made since tags carries one
//! before the dot (`tk_{40 hex}{16 hex tag}.{site}`, [`crate::account::tag`]), so a
//! guess is told from it offline.

use crate::hex;

/// The prefix every key starts with.
pub const KEY_PREFIX: &str = "tk_";
/// Length of a key's random part in hex characters.
const RANDOM_HEX: usize = 40;
/// Characters of a key kept in listings to tell keys apart.
pub const SHOWN_PREFIX_LEN: usize = KEY_PREFIX.len() + 6;

/// Why a request is not authorised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header.
    #[error("missing API key: send `Authorization: Bearer <key>`")]
    Missing,
    /// The header is not `Bearer <key>` with a well-formed key.
    #[error("malformed Authorization header: expected `Bearer tk_…`")]
    Malformed,
    /// No such key, or it was revoked.
    #[error("invalid or revoked API key")]
    Invalid,
    /// The key belongs to another site.
    #[error("this API key does not grant access to this site")]
    Forbidden,
}

impl AuthError {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing => "missing_api_key",
            Self::Malformed => "malformed_authorization",
            Self::Invalid => "invalid_api_key",
            Self::Forbidden => "forbidden",
        }
    }

    /// The HTTP status: 401, or 403 for another site's key.
    pub fn status(&self) -> u16 {
        match self {
            Self::Forbidden => 403,
            _ => 401,
        }
    }
}

/// A key for a site from 20 random bytes.
pub fn key_from_bytes(site: &str, bytes: &[u8; 20]) -> String {
    credential_from_bytes(KEY_PREFIX, site, bytes)
}

/// The site a well-formed key belongs to.
pub fn key_site(key: &str) -> Option<&str> {
    credential_site(KEY_PREFIX, key)
}

/// A credential of this shape (`{prefix}{40 hex}.{site}`; keys and shared
/// links, [`crate::account::share`]) from 20 random bytes.
pub fn credential_from_bytes(prefix: &str, site: &str, bytes: &[u8; 20]) -> String {
    format!("{prefix}{}.{site}", hex::encode(bytes))
}

/// The site of a well-formed credential with this prefix.
pub fn credential_site<'a>(prefix: &str, text: &'a str) -> Option<&'a str> {
    credential_suffix(prefix, text).filter(|site| crate::keys::valid_site_id(site))
}

/// What follows the dot of `{prefix}{40 hex}[{tag}].{suffix}`: a
/// credential with or without its tag ([`crate::account::tag`]); the suffix is the
/// caller's to check.
pub(crate) fn credential_suffix<'a>(prefix: &str, text: &'a str) -> Option<&'a str> {
    let (random, suffix) = text.strip_prefix(prefix)?.split_once('.')?;
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    let tagged = RANDOM_HEX + crate::account::tag::TAG_HEX;
    ((random.len() == RANDOM_HEX || random.len() == tagged) && random.bytes().all(lower_hex))
        .then_some(suffix)
}

/// Whether text has the shape of a key.
pub fn is_well_formed(key: &str) -> bool {
    key_site(key).is_some()
}

/// The stored form of a key: hex SHA-256.
pub fn hash_key(key: &str) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, key.as_bytes()).as_ref())
}

/// The key (or shared link token, [`crate::account::share`]) in an
/// `Authorization: Bearer <key>` header value.
pub fn bearer(header: Option<&str>) -> Result<&str, AuthError> {
    let header = header.ok_or(AuthError::Missing)?.trim();
    let (scheme, key) = header.split_once(' ').ok_or(AuthError::Malformed)?;
    let key = key.trim();
    let share = crate::account::share::token_site(key).is_some();
    if !scheme.eq_ignore_ascii_case("bearer") || !(is_well_formed(key) || share) {
        return Err(AuthError::Malformed);
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_their_site() {
        let key = key_from_bytes("example.com", &[7u8; 20]);
        assert!(is_well_formed(&key));
        assert_eq!(key_site(&key), Some("example.com"));
        assert!(!is_well_formed("tk_short"));
        assert!(!is_well_formed(&key.to_uppercase()));
        assert!(!is_well_formed(&format!("{}.Bad#Site", &key[..43])));
    }

    #[test]
    fn hashes_with_sha256() {
        // sha256("abc"), FIPS 180-2 appendix B.1.
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn reads_bearer_headers() {
        let key = key_from_bytes("blog", &[1u8; 20]);
        assert_eq!(bearer(Some(&format!("Bearer {key}"))), Ok(key.as_str()));
        assert_eq!(bearer(Some(&format!("bearer  {key} "))), Ok(key.as_str()));
        assert_eq!(bearer(None), Err(AuthError::Missing));
        assert_eq!(bearer(Some("Basic abc")), Err(AuthError::Malformed));
        assert_eq!(
            bearer(Some(&format!("Token {key}"))),
            Err(AuthError::Malformed)
        );
        assert_eq!(bearer(Some("Bearer tk_nothex")), Err(AuthError::Malformed));
    }
}
