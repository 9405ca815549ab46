//! Shared dashboard links: read-only tokens for one site.
//!
//! A share token is `ts_`, 40 lower-case hex characters (160 random bits),
//! a dot and the site id, like an API key ([`crate::account::auth`]) but good only
//! for reading that site's reports and dashboard, never the Stats API and
//! never anything about keys. Only `sha256(token)` is stored (`SITE#{site}`
//! / `SHARE#{hash}`), with what the link allows: an optional fixed filter
//! ANDed into every report, an expiry, and an optional password.
//!
//! A password is kept as PBKDF2-HMAC-SHA256 ([`PASSWORD_ITERATIONS`]
//! rounds, a random salt). Unlocking a link with it gives a session
//! ([`session`]): `{expiry}.{mac}`, an HMAC over the share's hash and the
//! expiry keyed by the stored password hash, good for [`SESSION_MS`]. It
//! needs no secret of its own, cannot be forged without the stored hash,
//! and dies with the share: every request reads the share, so a revocation
//! takes effect at once.

use crate::{DAY_MS, Millis, hex};
use ring::{hmac, pbkdf2};
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;

/// The prefix every share token starts with.
pub const SHARE_PREFIX: &str = "ts_";
/// PBKDF2 rounds for a link's password.
pub const PASSWORD_ITERATIONS: u32 = 100_000;
/// How long an unlocked session lasts.
pub const SESSION_MS: Millis = crate::HOUR_MS;
/// Shortest password accepted.
pub const MIN_PASSWORD: usize = 8;
/// Longest password accepted, in bytes.
pub const MAX_PASSWORD: usize = 200;
/// Longest label, in bytes.
pub const MAX_LABEL: usize = 120;

/// Why a share cannot be used or created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShareError {
    /// No such share, or it was revoked.
    #[error("invalid or revoked share link")]
    Invalid,
    /// The share expired.
    #[error("this share link has expired")]
    Expired,
    /// The share has a password and no valid session came with the request.
    #[error("this share link needs its password")]
    PasswordRequired,
    /// The password is wrong.
    #[error("wrong password")]
    WrongPassword,
    /// A password outside the accepted length.
    #[error("a password must be {MIN_PASSWORD} to {MAX_PASSWORD} bytes")]
    BadPassword,
    /// An expiry that is neither `Nd` nor a date in the future.
    #[error("expiry must be a number of days (30d) or a future date (2027-01-31)")]
    BadExpiry,
    /// A label too long or with control characters.
    #[error("a label must be at most {MAX_LABEL} bytes without control characters")]
    BadLabel,
}

impl ShareError {
    /// The machine-readable code.
    pub fn code(self) -> &'static str {
        match self {
            Self::Invalid => "invalid_share",
            Self::Expired => "share_expired",
            Self::PasswordRequired => "share_password_required",
            Self::WrongPassword => "wrong_password",
            Self::BadPassword => "bad_password",
            Self::BadExpiry => "bad_expiry",
            Self::BadLabel => "bad_label",
        }
    }
}

/// A stored password: PBKDF2-HMAC-SHA256 of it with a random salt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasswordHash {
    /// Hex salt.
    pub salt: String,
    /// Rounds.
    pub iterations: u32,
    /// Hex derived key.
    pub hash: String,
}

impl PasswordHash {
    /// Hashes a password with a salt.
    pub fn new(password: &str, salt: &[u8; 16], iterations: u32) -> Result<Self, ShareError> {
        if password.len() < MIN_PASSWORD || password.len() > MAX_PASSWORD {
            return Err(ShareError::BadPassword);
        }
        let rounds = NonZeroU32::new(iterations).ok_or(ShareError::BadPassword)?;
        let mut out = [0u8; 32];
        pbkdf2::derive(
            pbkdf2::PBKDF2_HMAC_SHA256,
            rounds,
            salt,
            password.as_bytes(),
            &mut out,
        );
        Ok(Self {
            salt: hex::encode(salt),
            iterations,
            hash: hex::encode(&out),
        })
    }

    /// Whether `password` is the one hashed (compared in constant time).
    pub fn verify(&self, password: &str) -> bool {
        let (Some(salt), Some(hash), Some(rounds)) = (
            hex::decode(&self.salt),
            hex::decode(&self.hash),
            NonZeroU32::new(self.iterations),
        ) else {
            return false;
        };
        password.len() <= MAX_PASSWORD
            && pbkdf2::verify(
                pbkdf2::PBKDF2_HMAC_SHA256,
                rounds,
                &salt,
                password.as_bytes(),
                &hash,
            )
            .is_ok()
    }
}

/// A stored share (the token itself is never stored, only its hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    /// Hex SHA-256 of the token.
    pub hash: String,
    /// The first characters of the token, to tell shares apart in listings.
    pub prefix: String,
    /// A label given at creation.
    #[serde(default)]
    pub label: String,
    /// A filter ANDed into every report read through the link (the
    /// `filters` syntax; empty for none).
    #[serde(default)]
    pub filter: String,
    /// When it was created.
    pub created_at: Millis,
    /// When it stops working, if ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Millis>,
    /// The password, if the link has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<PasswordHash>,
    /// When it was revoked, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Millis>,
    /// The site-wide saved segment the link is locked to, if any
    /// ([`crate::product::saved_segment`]): referenced, so an edit applies; its
    /// conditions are ANDed in after the link's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
}

impl Share {
    /// Whether the link still opens at `now`: not revoked, not expired.
    pub fn live(&self, now: Millis) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| at > now)
    }
}

/// A token for a site from 20 random bytes.
pub fn token_from_bytes(site: &str, bytes: &[u8; 20]) -> String {
    crate::account::auth::credential_from_bytes(SHARE_PREFIX, site, bytes)
}

/// The site a well-formed token belongs to.
pub fn token_site(token: &str) -> Option<&str> {
    crate::account::auth::credential_site(SHARE_PREFIX, token)
}

/// The stored form of a token: hex SHA-256, as for keys.
pub fn hash_token(token: &str) -> String {
    crate::account::auth::hash_key(token)
}

/// Characters of a token kept in listings.
pub fn shown_prefix(token: &str) -> String {
    token.chars().take(SHARE_PREFIX.len() + 6).collect()
}

/// Checks a label.
pub fn check_label(label: &str) -> Result<(), ShareError> {
    if label.len() > MAX_LABEL || label.chars().any(char::is_control) {
        return Err(ShareError::BadLabel);
    }
    Ok(())
}

/// An expiry from `30d` (days from now) or a date (`2027-01-31`, the end
/// of that UTC day); it must lie in the future.
pub fn parse_expiry(text: &str, now: Millis) -> Result<Millis, ShareError> {
    let text = text.trim();
    let at = if let Some(days) = text.strip_suffix('d') {
        let days: i64 = days.parse().map_err(|_| ShareError::BadExpiry)?;
        if !(1..=3650).contains(&days) {
            return Err(ShareError::BadExpiry);
        }
        now + days * DAY_MS
    } else {
        let day = crate::time::zone::parse_date(text).ok_or(ShareError::BadExpiry)?;
        crate::time::zone::utc_midnight(day) + DAY_MS
    };
    if at <= now {
        return Err(ShareError::BadExpiry);
    }
    Ok(at)
}

/// A shared link as `tally share create` and the console's
/// `POST sites/{site}/shares` describe it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShareSpec {
    /// A label to recognise the link by.
    #[serde(default)]
    pub label: String,
    /// A filter every report of the link is narrowed by (`filters` syntax).
    #[serde(default)]
    pub filter: String,
    /// When the link stops working: days (`30d`) or a date (`2027-01-31`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// A password to ask before showing the dashboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// The id of a site-wide saved segment to lock the link to (the
    /// caller checks it with `saved_segment::lockable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
}

/// Why a [`ShareSpec`] is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareSpecError {
    /// The label, expiry or password.
    #[error(transparent)]
    Share(#[from] ShareError),
    /// The filter does not parse.
    #[error("filter: {0}")]
    Filter(#[from] crate::engine::filter::FilterError),
}

impl ShareSpecError {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Share(e) => e.code(),
            Self::Filter(_) => "invalid_filter",
        }
    }
}

impl ShareSpec {
    /// The stored link of `site` and its token (to show once), from 16
    /// random bytes of password salt and 20 of token, tagged with `tag`
    /// when given ([`crate::account::tag`]); everything is checked before anything
    /// is made.
    pub fn build(
        &self,
        site: &str,
        salt: &[u8; 16],
        token_bytes: &[u8; 20],
        tag: Option<&crate::account::tag::TagKey>,
        now: Millis,
    ) -> Result<(Share, String), ShareSpecError> {
        check_label(&self.label)?;
        // Stored normalised, as the API writes filters back.
        let filter = crate::engine::filter::Filter::parse(self.filter.trim())?.to_query();
        let expires_at = self
            .expires
            .as_deref()
            .map(|e| parse_expiry(e, now))
            .transpose()?;
        let password = self
            .password
            .as_deref()
            .map(|p| PasswordHash::new(p, salt, PASSWORD_ITERATIONS))
            .transpose()?;
        let token = crate::account::tag::credential(tag, SHARE_PREFIX, site, token_bytes);
        let share = Share {
            hash: hash_token(&token),
            prefix: shown_prefix(&token),
            label: self.label.clone(),
            filter,
            created_at: now,
            expires_at,
            password,
            revoked_at: None,
            segment: self.segment.clone(),
        };
        Ok((share, token))
    }
}

fn session_key(password: &PasswordHash) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, password.hash.as_bytes())
}

fn session_message(share: &Share, expires: Millis) -> String {
    format!("{}|{expires}", share.hash)
}

/// A session for a password-protected share, good until `now +
/// SESSION_MS`; `None` when the share has no password.
pub fn session(share: &Share, now: Millis) -> Option<(String, Millis)> {
    let password = share.password.as_ref()?;
    let expires = now + SESSION_MS;
    let tag = hmac::sign(
        &session_key(password),
        session_message(share, expires).as_bytes(),
    );
    Some((format!("{expires}.{}", hex::encode(tag.as_ref())), expires))
}

/// Whether the share may be read at `now` with this session (needed only
/// when it has a password).
pub fn check(share: &Share, session: Option<&str>, now: Millis) -> Result<(), ShareError> {
    if share.revoked_at.is_some() {
        return Err(ShareError::Invalid);
    }
    if share.expires_at.is_some_and(|at| now >= at) {
        return Err(ShareError::Expired);
    }
    let Some(password) = &share.password else {
        return Ok(());
    };
    let valid = session
        .and_then(|s| s.split_once('.'))
        .and_then(|(expires, tag)| Some((expires.parse::<Millis>().ok()?, hex::decode(tag)?)))
        .is_some_and(|(expires, tag)| {
            now < expires
                && expires <= now + SESSION_MS
                && hmac::verify(
                    &session_key(password),
                    session_message(share, expires).as_bytes(),
                    &tag,
                )
                .is_ok()
        });
    if valid {
        Ok(())
    } else {
        Err(ShareError::PasswordRequired)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn share(password: Option<&str>) -> Share {
        Share {
            hash: hash_token("ts_x"),
            prefix: "ts_abcdef".into(),
            label: String::new(),
            filter: String::new(),
            created_at: 0,
            expires_at: Some(10 * DAY_MS),
            password: password.map(|p| PasswordHash::new(p, &[7; 16], 1_000).unwrap()),
            revoked_at: None,
            segment: None,
        }
    }

    #[test]
    fn tokens_carry_their_site_and_are_not_keys() {
        let token = token_from_bytes("example.com", &[0xab; 20]);
        assert_eq!(token_site(&token), Some("example.com"));
        assert_eq!(crate::account::auth::key_site(&token), None);
        let key = crate::account::auth::key_from_bytes("example.com", &[0xab; 20]);
        assert_eq!(token_site(&key), None);
        assert_eq!(token_site("ts_short.example.com"), None);
        assert_ne!(hash_token(&token), hash_token(&key));
    }

    #[test]
    fn passwords_verify_only_themselves() {
        let hash = PasswordHash::new("correct horse", &[1; 16], 1_000).unwrap();
        assert!(hash.verify("correct horse"));
        assert!(!hash.verify("correct hors"));
        assert!(!hash.verify(""));
        let other_salt = PasswordHash::new("correct horse", &[2; 16], 1_000).unwrap();
        assert_ne!(hash.hash, other_salt.hash);
        assert_eq!(
            PasswordHash::new("short", &[1; 16], 1_000),
            Err(ShareError::BadPassword)
        );
    }

    #[test]
    fn a_session_opens_its_share_until_it_expires() {
        let s = share(Some("open sesame"));
        assert_eq!(check(&s, None, 0), Err(ShareError::PasswordRequired));
        let (token, expires) = session(&s, 1_000).unwrap();
        assert_eq!(expires, 1_000 + SESSION_MS);
        assert_eq!(check(&s, Some(&token), 2_000), Ok(()));
        assert_eq!(
            check(&s, Some(&token), expires),
            Err(ShareError::PasswordRequired)
        );
        // Another share's session, a forged expiry, a changed password.
        let mut other = share(Some("open sesame"));
        other.hash = hash_token("ts_y");
        assert!(check(&other, Some(&token), 2_000).is_err());
        let forged = format!(
            "{}{}",
            expires + SESSION_MS,
            &token[token.find('.').unwrap()..]
        );
        assert!(check(&s, Some(&forged), 2_000).is_err());
        let changed = share(Some("new password"));
        assert!(check(&changed, Some(&token), 2_000).is_err());
        assert!(check(&s, Some("garbage"), 2_000).is_err());
        // No password: no session needed, none made.
        assert_eq!(check(&share(None), None, 0), Ok(()));
        assert_eq!(session(&share(None), 0), None);
    }

    #[test]
    fn revoked_and_expired_shares_are_refused() {
        let mut s = share(None);
        assert_eq!(check(&s, None, 10 * DAY_MS), Err(ShareError::Expired));
        s.revoked_at = Some(5);
        assert_eq!(check(&s, None, 6), Err(ShareError::Invalid));
    }

    #[test]
    fn expiries_are_days_or_future_dates() {
        let now = crate::time::zone::utc_midnight(time::macros::date!(2026 - 12 - 01));
        assert_eq!(parse_expiry("30d", now), Ok(now + 30 * DAY_MS));
        assert_eq!(parse_expiry("2026-12-31", now), Ok(now + 31 * DAY_MS));
        for bad in ["0d", "-1d", "xd", "2026-11-30", "tomorrow", "99999d"] {
            assert_eq!(parse_expiry(bad, now), Err(ShareError::BadExpiry), "{bad}");
        }
    }

    #[test]
    fn specs_build_links_checked_first() {
        let spec = ShareSpec {
            label: "team".into(),
            filter: "page==/blog/*".into(),
            expires: Some("30d".into()),
            password: None,
            segment: None,
        };
        let (link, token) = spec.build("blog", &[1; 16], &[2; 20], None, 1_000).unwrap();
        assert_eq!(token_site(&token), Some("blog"));
        assert_eq!(link.hash, hash_token(&token));
        assert_eq!(link.expires_at, Some(1_000 + 30 * DAY_MS));
        assert!(link.password.is_none());
        let bad_filter = ShareSpec {
            filter: "nonsense".into(),
            ..spec.clone()
        };
        assert_eq!(
            bad_filter
                .build("blog", &[1; 16], &[2; 20], None, 0)
                .map(|_| ())
                .unwrap_err()
                .code(),
            "invalid_filter"
        );
        let short = ShareSpec {
            password: Some("short".into()),
            ..spec
        };
        assert_eq!(
            short
                .build("blog", &[1; 16], &[2; 20], None, 0)
                .map(|_| ())
                .unwrap_err(),
            ShareSpecError::Share(ShareError::BadPassword)
        );
    }
}
