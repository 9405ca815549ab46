//! The daily salt and the visitor id.
//!
//! The salt of a day is 32 random bytes, made by the first instance that
//! needs it and shared through the store (`tally_store::salt`), so nothing
//! can derive it from a long-lived secret; then
//! `visitor_id = hex(HMAC-SHA256(daily_salt, "{site}|{ip}|{user_agent}"))[..16]`.
//! ([`daily_salt`] derives a salt-shaped key from a secret and a date for
//! purposes other than visitors: network keys, tests.)
//! The day is the event's calendar day in the site's time zone, so one local
//! day never straddles two salts. The salt rotates daily, so the same person
//! is a different visitor tomorrow and on another site; neither the IP nor
//! the user agent can be recovered from the id. Salts and secrets never
//! appear in `Debug` output.
//!
//! The tab's session id (`sid`, made by the tracker and kept for the tab's
//! life) is stored hashed the same way:
//! `session_id = hex(HMAC-SHA256(daily_salt, "sid|{site}|{sid}"))[..16]`, so
//! a tab open across midnight has unrelated stored ids on either side and
//! cannot link a visitor's two daily ids.

use crate::hex;
use crate::time::zone::format_date;
use ring::hmac;
use time::Date;

/// Length of a visitor id in hex characters (64 bits).
pub const VISITOR_ID_LEN: usize = 16;

/// The server secret the daily salts derive from.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Wraps secret bytes (for example `TALLY_SALT_SECRET`).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(bytes.into())
    }

    /// `HMAC-SHA256(secret, label)`: a key of its own for one purpose
    /// (the label names it), unrelated to any daily salt.
    pub(crate) fn derive(&self, label: &[u8]) -> [u8; 32] {
        let key = hmac::Key::new(hmac::HMAC_SHA256, &self.0);
        let mut out = [0u8; 32];
        out.copy_from_slice(hmac::sign(&key, label).as_ref());
        out
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// One day's salt.
#[derive(Clone, PartialEq, Eq)]
pub struct DailySalt([u8; 32]);

impl std::fmt::Debug for DailySalt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DailySalt(<redacted>)")
    }
}

impl DailySalt {
    /// The salt as hex, the form stored in the shared `SALT` item.
    pub fn to_hex(&self) -> String {
        hex::encode(&self.0)
    }

    /// A salt of 32 bytes (fresh randomness, for a day's shared salt).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Reads a salt stored by [`DailySalt::to_hex`].
    pub fn from_hex(text: &str) -> Option<Self> {
        let bytes: [u8; 32] = hex::decode(text)?.try_into().ok()?;
        Some(Self(bytes))
    }
}

/// A salt-shaped key derived from `secret` and a date: never a visitor
/// salt (those are random), but a per-purpose key (the query and console
/// network keys use [`Date::MIN`]) and a fixed salt for tests.
pub fn daily_salt(secret: &Secret, day: Date) -> DailySalt {
    let key = hmac::Key::new(hmac::HMAC_SHA256, &secret.0);
    let tag = hmac::sign(&key, format_date(day).as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(tag.as_ref());
    DailySalt(out)
}

/// The visitor id of a client of a site on the salt's day.
pub fn visitor_id(salt: &DailySalt, site: &str, ip: &str, user_agent: &str) -> String {
    keyed_id(salt, &[site, "|", ip, "|", user_agent])
}

/// `hex(HMAC-SHA256(salt, concat(parts)))[..VISITOR_ID_LEN]`.
fn keyed_id(salt: &DailySalt, parts: &[&str]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, &salt.0);
    let mut ctx = hmac::Context::with_key(&key);
    for part in parts {
        ctx.update(part.as_bytes());
    }
    let tag = ctx.sign();
    let mut id = hex::encode(&tag.as_ref()[..VISITOR_ID_LEN / 2]);
    id.truncate(VISITOR_ID_LEN);
    id
}

/// The stored id of a tab's session id on the salt's day (see the module
/// docs): the same tab gives the same id all day, an unrelated one the
/// next day and on another site.
pub fn session_id(salt: &DailySalt, site: &str, sid: &str) -> String {
    keyed_id(salt, &["sid|", site, "|", sid])
}

/// A keyed hash of a client's network (an IPv4 address, or the /64 of an
/// IPv6 address) for rate limiting: the network itself is never stored.
pub fn network_id(salt: &DailySalt, ip: &str) -> String {
    let network = network_of(ip);
    let key = hmac::Key::new(hmac::HMAC_SHA256, &salt.0);
    let tag = hmac::sign(&key, format!("net|{network}").as_bytes());
    hex::encode(&tag.as_ref()[..8])
}

/// The rate-limit network of an address: IPv4 as is, IPv6 cut to its /64.
/// Text that is not an address is used as given.
pub fn network_of(ip: &str) -> String {
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4.to_string();
            }
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Ok(std::net::IpAddr::V4(v4)) => v4.to_string(),
        Err(_) => ip.to_owned(),
    }
}

/// Compares two byte strings in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use time::macros::date;

    /// RFC 4231 test case 2: proves the HMAC primitive and key handling.
    #[test]
    fn hmac_matches_rfc4231_case_2() {
        let salt = daily_salt_of_raw(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            salt,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    fn daily_salt_of_raw(key: &[u8], msg: &[u8]) -> String {
        let key = hmac::Key::new(hmac::HMAC_SHA256, key);
        hex::encode(hmac::sign(&key, msg).as_ref())
    }

    /// Published vectors (docs/PRIVACY.md), computed independently with
    /// Python's `hmac` module:
    /// `hmac.new(b"tally-test-secret", b"2026-11-30", sha256)` and then the
    /// visitor id over `b"blog|203.0.113.7|Mozilla/5.0 (X11; Linux x86_64) Test"`.
    #[test]
    fn matches_published_vectors() {
        let secret = Secret::new(b"tally-test-secret".to_vec());
        let salt = daily_salt(&secret, date!(2026 - 11 - 30));
        assert_eq!(
            salt.to_hex(),
            "678b7f17fba73b05f6d97156609f18c6e769b8bf0a1008171e78e90d26c4d4c4"
        );
        let ua = "Mozilla/5.0 (X11; Linux x86_64) Test";
        assert_eq!(
            visitor_id(&salt, "blog", "203.0.113.7", ua),
            "fd101027d662dc8e"
        );
        assert_eq!(
            visitor_id(&salt, "shop", "203.0.113.7", ua),
            "b3f442b97c14a0ce"
        );
        // `hmac.new(salt, b"sid|blog|k3j4h5", sha256)`, and the same with
        // the next day's salt.
        assert_eq!(session_id(&salt, "blog", "k3j4h5"), "2fd8b989af35362a");
        let next = daily_salt(&secret, date!(2026 - 12 - 01));
        assert_eq!(session_id(&next, "blog", "k3j4h5"), "fdab749336cafc8f");
    }

    #[test]
    fn visitor_ids_differ_across_days_and_sites() {
        let secret = Secret::new(b"s".to_vec());
        let a = daily_salt(&secret, date!(2026 - 11 - 30));
        let b = daily_salt(&secret, date!(2026 - 12 - 01));
        let ua = "Mozilla/5.0";
        assert_eq!(
            visitor_id(&a, "x", "1.2.3.4", ua),
            visitor_id(&a, "x", "1.2.3.4", ua)
        );
        assert_ne!(
            visitor_id(&a, "x", "1.2.3.4", ua),
            visitor_id(&b, "x", "1.2.3.4", ua)
        );
        assert_ne!(
            visitor_id(&a, "x", "1.2.3.4", ua),
            visitor_id(&a, "y", "1.2.3.4", ua)
        );
        assert_eq!(visitor_id(&a, "x", "1.2.3.4", ua).len(), VISITOR_ID_LEN);
    }

    #[test]
    fn salts_round_trip_through_hex_and_never_print() {
        let salt = daily_salt(&Secret::new(b"x".to_vec()), date!(2026 - 01 - 01));
        assert_eq!(DailySalt::from_hex(&salt.to_hex()), Some(salt.clone()));
        assert!(!format!("{salt:?}").contains(&salt.to_hex()[..8]));
        assert_eq!(
            format!("{:?}", Secret::new(b"hunter2".to_vec())),
            "Secret(<redacted>)"
        );
    }

    #[test]
    fn ipv6_networks_are_cut_to_a_slash_64() {
        assert_eq!(network_of("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
        assert_eq!(network_of("2001:db8:1:2:ffff::1"), "2001:db8:1:2::/64");
        assert_eq!(network_of("::ffff:192.0.2.1"), "192.0.2.1");
        assert_eq!(network_of("192.0.2.1"), "192.0.2.1");
        let salt = daily_salt(&Secret::new(b"k".to_vec()), date!(2026 - 01 - 01));
        assert_eq!(
            network_id(&salt, "2001:db8:1:2::1"),
            network_id(&salt, "2001:db8:1:2::9")
        );
        assert_ne!(
            network_id(&salt, "2001:db8:1:2::1"),
            network_id(&salt, "2001:db8:1:3::1")
        );
    }

    #[test]
    fn compares_without_short_circuit_semantics() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
