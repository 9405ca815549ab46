//! Credential tags: a short MAC in a credential's text, so a guess can be
//! told from a real credential offline, before any limit or read.
//!
//! A tagged credential is `{prefix}{40 hex}{tag}.{suffix}` (an API key
//! `tk_…`, a shared link `ts_…`, a console session `tse_…`): the untagged
//! text `{prefix}{40 hex}.{suffix}` with [`TAG_HEX`] hex characters of
//! `HMAC-SHA256(k, untagged)` put before the dot, where `k =
//! HMAC-SHA256(deployment secret, "tally credential tag v1")` (the salt
//! secret, a derivation of its own: no daily salt or network key equals
//! it). The tag is no part of what proves access: the credential is
//! still looked up by the hash of its whole text, and the store decides
//! whether it exists, is revoked or expired, and what it may do. The tag
//! only says that this deployment made it, which no guesser can say
//! without the secret (a 2⁻⁶⁴ chance a try), so a credential whose tag
//! verifies skips the failed-guess limiter and one whose tag fails is
//! refused without a read.
//!
//! A rotation of the deployment secret keeps the previous tag key for a
//! grace period ([`TagKeys`]): credentials made before it keep working
//! until then, and are refused after.
//!
//! Credentials made before tags (40 hex, then the dot) are
//! [`TagVerdict::Untagged`]: they keep working through the limiter, and a
//! new one made in their place is tagged.

use crate::Millis;
use crate::ingest::salt::Secret;
use ring::hmac;

/// Hex characters of a tag (64 bits).
pub const TAG_HEX: usize = 16;
/// Hex characters of a credential's random part.
const RANDOM_HEX: usize = 40;
/// What the tag key is derived with from the deployment secret.
const LABEL: &[u8] = b"tally credential tag v1";

/// The key that tags credentials, derived from the deployment secret.
#[derive(Clone)]
pub struct TagKey(hmac::Key);

impl std::fmt::Debug for TagKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TagKey(<redacted>)")
    }
}

impl TagKey {
    /// The tag key of a deployment secret.
    pub fn derive(secret: &Secret) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, &secret.derive(LABEL)))
    }

    /// The tag of an untagged credential's text.
    fn tag(&self, untagged: &str) -> String {
        let mac = hmac::sign(&self.0, untagged.as_bytes());
        crate::hex::encode(mac.as_ref().get(..TAG_HEX / 2).unwrap_or_default())
    }
}

/// The tag keys a deployment accepts: the current one, which tags every
/// new credential, and after a rotation of the deployment secret the
/// previous one until a time, so no key, link or session breaks at once.
#[derive(Debug, Clone)]
pub struct TagKeys {
    current: TagKey,
    previous: Option<(TagKey, Millis)>,
}

impl TagKeys {
    /// Only `current`.
    pub fn new(current: TagKey) -> Self {
        Self {
            current,
            previous: None,
        }
    }

    /// Also `previous`, accepted before `until`.
    pub fn with_previous(self, previous: TagKey, until: Millis) -> Self {
        Self {
            previous: Some((previous, until)),
            ..self
        }
    }

    /// The key new credentials are tagged with.
    pub fn current(&self) -> &TagKey {
        &self.current
    }

    /// Whether `token` carries a tag, and whether it is the current key's
    /// or, before its time ends, the previous key's. Offline.
    pub fn verify(&self, token: &str, now: Millis) -> TagVerdict {
        match verify_tag(&self.current, token) {
            TagVerdict::Tagged(false) => match &self.previous {
                Some((previous, until)) if now < *until => verify_tag(previous, token),
                _ => TagVerdict::Tagged(false),
            },
            verdict => verdict,
        }
    }
}

/// What a credential's tag says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagVerdict {
    /// It carries a tag: whether the tag is this deployment's.
    Tagged(bool),
    /// It carries none (made before tags, or not a credential's shape).
    Untagged,
}

/// A tagged credential `{prefix}{40 hex}{tag}.{suffix}` from 20 random
/// bytes.
pub fn tagged_credential(key: &TagKey, prefix: &str, suffix: &str, bytes: &[u8; 20]) -> String {
    let untagged = crate::account::auth::credential_from_bytes(prefix, suffix, bytes);
    let tag = key.tag(&untagged);
    let random_end = prefix.len() + RANDOM_HEX;
    let (head, rest) = untagged.split_at(random_end.min(untagged.len()));
    format!("{head}{tag}{rest}")
}

/// A new credential: tagged with `key`, or without a tag when there is no
/// key (a CLI run without the deployment secret).
pub fn credential(key: Option<&TagKey>, prefix: &str, suffix: &str, bytes: &[u8; 20]) -> String {
    match key {
        Some(key) => tagged_credential(key, prefix, suffix, bytes),
        None => crate::account::auth::credential_from_bytes(prefix, suffix, bytes),
    }
}

/// Whether `token` carries a tag, and whether it is `key`'s (compared in
/// constant time). Offline: no read, no state.
pub fn verify_tag(key: &TagKey, token: &str) -> TagVerdict {
    match split(token) {
        Some((untagged, tag)) => TagVerdict::Tagged(crate::ingest::salt::constant_time_eq(
            key.tag(&untagged).as_bytes(),
            tag.as_bytes(),
        )),
        None => TagVerdict::Untagged,
    }
}

/// The untagged text and the tag of a credential shaped
/// `{prefix}_{40 hex}{tag}.{suffix}`.
fn split(token: &str) -> Option<(String, &str)> {
    let (head, suffix) = token.split_once('.')?;
    let random_start = head.find('_')? + 1;
    let hex = head.get(random_start..)?;
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if hex.len() != RANDOM_HEX + TAG_HEX || !hex.bytes().all(lower_hex) {
        return None;
    }
    let (random, tag) = hex.split_at(RANDOM_HEX);
    let prefix = head.get(..random_start)?;
    Some((format!("{prefix}{random}.{suffix}"), tag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::token;
    use crate::{account::auth, account::share};
    use proptest::prelude::*;

    fn key(secret: &str) -> TagKey {
        TagKey::derive(&Secret::new(secret.as_bytes().to_vec()))
    }

    #[test]
    fn a_tagged_credential_keeps_its_shape_and_its_site() {
        let k = key("deployment-secret");
        let api = tagged_credential(&k, auth::KEY_PREFIX, "example.com", &[7; 20]);
        assert_eq!(api.len(), "tk_".len() + 40 + TAG_HEX + ".example.com".len());
        assert!(api.starts_with(&format!("tk_{}", "07".repeat(20))));
        assert_eq!(auth::key_site(&api), Some("example.com"));
        assert_eq!(verify_tag(&k, &api), TagVerdict::Tagged(true));
        let link = tagged_credential(&k, share::SHARE_PREFIX, "blog.example", &[8; 20]);
        assert_eq!(share::token_site(&link), Some("blog.example"));
        assert_eq!(auth::key_site(&link), None);
        let uid = "0123456789abcdef";
        let session = tagged_credential(&k, token::SESSION_PREFIX, uid, &[9; 20]);
        assert_eq!(token::session_user(&session), Some(uid));
        assert_eq!(verify_tag(&k, &session), TagVerdict::Tagged(true));
    }

    #[test]
    fn credentials_made_before_tags_are_untagged() {
        let k = key("deployment-secret");
        for legacy in [
            auth::key_from_bytes("example.com", &[1; 20]),
            share::token_from_bytes("example.com", &[2; 20]),
            token::session_token("0123456789abcdef", &[3; 20]),
        ] {
            assert_eq!(verify_tag(&k, &legacy), TagVerdict::Untagged, "{legacy}");
        }
        for other in ["", "tk_", "tsu_00", "tk_.x", "nothing.at.all", "tk_0_1.x"] {
            assert_eq!(verify_tag(&k, other), TagVerdict::Untagged, "{other}");
        }
    }

    #[test]
    fn another_secret_refuses_the_tag() {
        let api = tagged_credential(&key("old secret"), "tk_", "example.com", &[7; 20]);
        assert_eq!(
            verify_tag(&key("new secret"), &api),
            TagVerdict::Tagged(false)
        );
        // The tag cut out leaves another credential, with no tag.
        let cut = format!("{}{}", &api[..43], &api[43 + TAG_HEX..]);
        assert_eq!(cut, auth::key_from_bytes("example.com", &[7; 20]));
        assert_eq!(verify_tag(&key("old secret"), &cut), TagVerdict::Untagged);
    }

    #[test]
    fn the_tag_key_is_no_daily_salt_of_the_secret() {
        // The console's network key is the secret's salt of `Date::MIN`;
        // the tag key must differ from it and from every day's salt.
        let secret = Secret::new(b"s".to_vec());
        let salt = crate::ingest::salt::daily_salt(&secret, time::Date::MIN);
        assert_ne!(salt.to_hex(), crate::hex::encode(&secret.derive(LABEL)));
        assert_eq!(format!("{:?}", key("s")), "TagKey(<redacted>)");
    }

    #[test]
    fn the_previous_key_holds_until_its_time_then_fails() {
        let (old, new) = (key("old secret"), key("new secret"));
        let made_before = tagged_credential(&old, auth::KEY_PREFIX, "example.com", &[4; 20]);
        let made_after = tagged_credential(&new, auth::KEY_PREFIX, "example.com", &[5; 20]);
        let keys = TagKeys::new(new.clone()).with_previous(old, 1_000);
        assert_eq!(keys.verify(&made_before, 999), TagVerdict::Tagged(true));
        assert_eq!(keys.verify(&made_before, 1_000), TagVerdict::Tagged(false));
        assert_eq!(keys.verify(&made_after, 5_000), TagVerdict::Tagged(true));
        let stranger = tagged_credential(&key("x"), auth::KEY_PREFIX, "example.com", &[6; 20]);
        assert_eq!(keys.verify(&stranger, 0), TagVerdict::Tagged(false));
        let legacy = auth::key_from_bytes("example.com", &[1; 20]);
        assert_eq!(keys.verify(&legacy, 0), TagVerdict::Untagged);
        assert_eq!(
            TagKeys::new(new).verify(&made_before, 0),
            TagVerdict::Tagged(false)
        );
    }

    proptest! {
        #[test]
        fn every_tagged_credential_verifies(
            bytes in any::<[u8; 20]>(),
            site in "[a-z0-9]{1,12}(\\.[a-z]{2,6})?",
            secret in any::<[u8; 32]>(),
        ) {
            let k = TagKey::derive(&Secret::new(secret.to_vec()));
            let api = tagged_credential(&k, auth::KEY_PREFIX, &site, &bytes);
            prop_assert_eq!(verify_tag(&k, &api), TagVerdict::Tagged(true));
            prop_assert_eq!(auth::key_site(&api), Some(site.as_str()));
        }

        #[test]
        fn any_single_character_changed_fails_the_tag(
            bytes in any::<[u8; 20]>(),
            at in 0usize..80,
            with in prop::sample::select(b"0123456789abcdefgz._-A".to_vec()),
        ) {
            let k = key("deployment-secret");
            let api = tagged_credential(&k, auth::KEY_PREFIX, "shop.example", &bytes);
            let at = at % api.len();
            prop_assume!(api.as_bytes()[at] != with);
            let mut changed = api.clone().into_bytes();
            changed[at] = with;
            let changed = String::from_utf8(changed).unwrap_or_default();
            prop_assert_ne!(verify_tag(&k, &changed), TagVerdict::Tagged(true));
        }
    }
}
