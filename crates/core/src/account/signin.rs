//! Who a `tally_session` cookie signs in: the rules every function that
//! takes the cookie applies the same way (the console's routes, the query
//! function's reads), without I/O.
//!
//! 1. [`Claim::of_cookies`]: the cookie's token, well formed
//!    ([`super::token::session_user`]): the user it names and its hash,
//!    the key of the stored session (`USER#{uid}` / `SESSION#{hash}`).
//! 2. [`Claim::accepts`]: the stored session answers the claim: the same
//!    user and hash (constant time), before its absolute end
//!    ([`super::record::SESSION_MS`]) and used in the last
//!    [`super::record::SESSION_IDLE_MS`] ([`ConsoleSession::is_live`]).
//! 3. [`must_enable_totp`]: an instance that requires 2FA refuses a user
//!    without it everything but turning it on.
//!
//! The idle expiry counts from `last_seen`, which the console writes (at
//! most every [`super::record::TOUCH_EVERY_MS`]); a function that only
//! reads (the query function) checks it and never writes it.

use super::record::{ConsoleSession, InstanceSettings, User};
use super::{cookie, token};
use crate::Millis;

/// A presented session token: the user it names and the hash it is
/// stored under. Never holds the token itself.
#[derive(Clone, PartialEq, Eq)]
pub struct Claim {
    /// The user the token names.
    pub uid: String,
    /// Hex SHA-256 of the token.
    pub hash: String,
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim")
            .field("uid", &self.uid)
            .finish_non_exhaustive()
    }
}

impl Claim {
    /// The claim of a session token, if it is well formed.
    pub fn of_token(presented: &str) -> Option<Self> {
        let uid = token::session_user(presented)?;
        Some(Self {
            uid: uid.to_owned(),
            hash: token::hash_token(presented),
        })
    }

    /// The claim of the `tally_session` cookie in `Cookie` header values,
    /// if there is one and it is well formed.
    pub fn of_cookies<'a>(headers: impl IntoIterator<Item = &'a str>) -> Option<Self> {
        Self::of_token(cookie::cookie(headers, cookie::SESSION_COOKIE)?)
    }

    /// The stored session, when it answers this claim at `now`: the
    /// claim's user and hash, alive ([`ConsoleSession::is_live`]).
    pub fn accepts(&self, stored: Option<ConsoleSession>, now: Millis) -> Option<ConsoleSession> {
        stored.filter(|s| {
            s.uid == self.uid
                && crate::ingest::salt::constant_time_eq(s.hash.as_bytes(), self.hash.as_bytes())
                && s.is_live(now)
        })
    }
}

/// Whether the instance requires 2FA and the user has not turned it on:
/// they may do nothing but turn it on (403 `totp_required`).
pub fn must_enable_totp(settings: &InstanceSettings, user: &User) -> bool {
    settings.require_2fa && !user.totp_enabled
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::record::{SESSION_IDLE_MS, SESSION_MS};
    use crate::{DAY_MS, MINUTE_MS};

    const UID: &str = "0123456789abcdef";
    const NOW: Millis = 1_800_000_000_000;

    fn session(token: &str, at: Millis) -> ConsoleSession {
        ConsoleSession::new(
            token::hash_token(token),
            UID,
            "Chrome on macOS".into(),
            "c".repeat(32),
            at,
        )
    }

    #[test]
    fn a_cookie_names_its_user_and_hash() {
        let t = token::session_token(UID, &[5; 20]);
        let header = format!("a=1; tally_session={t}; b=2");
        let claim = Claim::of_cookies([header.as_str()]).expect("claim");
        assert_eq!(claim.uid, UID);
        assert_eq!(claim.hash, token::hash_token(&t));
        assert!(
            !format!("{claim:?}").contains(&claim.hash),
            "no hash in logs"
        );
        assert_eq!(Claim::of_cookies(["tally_session=tk_nope"]), None);
        assert_eq!(Claim::of_cookies(["other=1"]), None);
        assert_eq!(Claim::of_cookies([]), None);
    }

    #[test]
    fn a_session_answers_while_alive() {
        let t = token::session_token(UID, &[5; 20]);
        let claim = Claim::of_token(&t).expect("claim");
        let s = session(&t, NOW);
        assert!(claim.accepts(Some(s.clone()), NOW).is_some());
        assert!(claim.accepts(None, NOW).is_none());
        // Idle: `last_seen` three days ago.
        assert!(
            claim
                .accepts(Some(s.clone()), NOW + SESSION_IDLE_MS)
                .is_none()
        );
        assert!(
            claim
                .accepts(Some(s.clone()), NOW + SESSION_IDLE_MS - 1)
                .is_some()
        );
        // Touched every day, it still ends 14 days after it began.
        let mut used = s.clone();
        used.last_seen = NOW + SESSION_MS - DAY_MS;
        assert!(
            claim
                .accepts(Some(used.clone()), NOW + SESSION_MS - MINUTE_MS)
                .is_some()
        );
        assert!(claim.accepts(Some(used), NOW + SESSION_MS).is_none());
        // Another user's item, or another token's.
        let mut other = s.clone();
        other.uid = "fedcba9876543210".into();
        assert!(claim.accepts(Some(other), NOW).is_none());
        let forged = session(&token::session_token(UID, &[6; 20]), NOW);
        assert!(claim.accepts(Some(forged), NOW).is_none());
    }

    #[test]
    fn require_2fa_stops_users_without_it() {
        let mut user = User {
            id: UID.into(),
            email: "a@example.com".into(),
            password: String::new(),
            totp_secret: None,
            totp_enabled: false,
            totp_last_step: None,
            instance_owner: false,
            created: 0,
            known_devices: Vec::new(),
        };
        let on = InstanceSettings { require_2fa: true };
        assert!(must_enable_totp(&on, &user));
        assert!(!must_enable_totp(&InstanceSettings::default(), &user));
        user.totp_enabled = true;
        assert!(!must_enable_totp(&on, &user));
    }
}
