//! The unsubscribe token: `{site}.{kind}.{recipient}.{mac}`, where
//! `recipient` is the first 8 bytes of SHA-256 of the address (hex; the
//! address itself is never in a link) and `mac` the first 16 bytes of
//! HMAC-SHA256(secret, `unsubscribe|{site}|{kind}|{address}`) (hex). It
//! works without signing in, for that recipient, site and kind only; the
//! secret is the instance's (stored once in the table).

use crate::hex::encode as hex;
use crate::product::report_mail::schedule::Kind;
use ring::{digest, hmac};

/// A token, parsed (not yet verified).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsubscribeToken {
    /// The site.
    pub site: String,
    /// The report kind.
    pub kind: Kind,
    /// The recipient's address hash ([`recipient_hash`]).
    pub recipient: String,
    mac: String,
}

/// The short hash a token names its recipient by.
pub fn recipient_hash(email: &str) -> String {
    hex(&digest::digest(&digest::SHA256, email.as_bytes()).as_ref()[..8])
}

fn mac(secret: &[u8], site: &str, kind: Kind, email: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let text = format!("unsubscribe|{site}|{}|{email}", kind.as_str());
    hex(&hmac::sign(&key, text.as_bytes()).as_ref()[..16])
}

/// The token that unsubscribes `email` from `kind` reports of `site`.
pub fn sign_unsubscribe(secret: &[u8], site: &str, kind: Kind, email: &str) -> String {
    format!(
        "{site}.{}.{}.{}",
        kind.as_str(),
        recipient_hash(email),
        mac(secret, site, kind, email)
    )
}

impl UnsubscribeToken {
    /// Parses a token's shape; `None` if it is not one.
    pub fn parse(token: &str) -> Option<Self> {
        if token.len() > 300 {
            return None;
        }
        let mut parts = token.rsplitn(4, '.');
        let mac = parts.next()?;
        let recipient = parts.next()?;
        let kind = Kind::parse(parts.next()?)?;
        let site = parts.next()?;
        let hex_of = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        if site.is_empty() || !hex_of(recipient, 16) || !hex_of(mac, 32) {
            return None;
        }
        Some(Self {
            site: site.to_owned(),
            kind,
            recipient: recipient.to_ascii_lowercase(),
            mac: mac.to_ascii_lowercase(),
        })
    }

    /// Whether `email` is the token's recipient (by hash).
    pub fn names(&self, email: &str) -> bool {
        recipient_hash(email) == self.recipient
    }
}

/// Whether `token` was signed with `secret` for `email` (compared in
/// constant time).
pub fn verify_unsubscribe(secret: &[u8], token: &UnsubscribeToken, email: &str) -> bool {
    if !token.names(email) {
        return false;
    }
    let want = mac(secret, &token.site, token.kind, email);
    want.len() == token.mac.len()
        && want
            .bytes()
            .zip(token.mac.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_signed_token_verifies_for_its_recipient_only() {
        let secret = [7u8; 32];
        let t = sign_unsubscribe(&secret, "shop.example", Kind::Weekly, "a@example.com");
        assert!(
            !t.contains("example.com."),
            "the address is not in the link"
        );
        let parsed = UnsubscribeToken::parse(&t).unwrap();
        assert_eq!(parsed.site, "shop.example");
        assert_eq!(parsed.kind, Kind::Weekly);
        assert!(verify_unsubscribe(&secret, &parsed, "a@example.com"));
        assert!(!verify_unsubscribe(&secret, &parsed, "b@example.com"));
        assert!(!verify_unsubscribe(&[8u8; 32], &parsed, "a@example.com"));
    }

    #[test]
    fn a_changed_site_kind_or_mac_does_not_verify() {
        let secret = [1u8; 32];
        let t = sign_unsubscribe(&secret, "a", Kind::Monthly, "x@example.com");
        let forged_site = t.replacen("a.", "b.", 1);
        let forged_kind = t.replace(".monthly.", ".weekly.");
        let mut forged_mac = t.clone();
        let last = forged_mac.pop().unwrap();
        forged_mac.push(if last == '0' { '1' } else { '0' });
        for f in [forged_site, forged_kind, forged_mac] {
            let parsed = UnsubscribeToken::parse(&f).unwrap();
            assert!(
                !verify_unsubscribe(&secret, &parsed, "x@example.com"),
                "{f}"
            );
        }
        for junk in [
            "",
            "a.b",
            "a.weekly.zz.00",
            "a.daily.0011223344556677.00112233445566778899aabbccddeeff",
        ] {
            assert_eq!(UnsubscribeToken::parse(junk), None, "{junk}");
        }
    }
}
