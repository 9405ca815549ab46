//! What the console stores about people: users, sessions, pending 2FA
//! logins, memberships, invites, setup tokens, password reset tokens, the
//! instance settings and audit entries, with the rules about them that need no I/O (email form,
//! session lives, the label a session is listed with).
//!
//! Secrets in these records (a password hash, a TOTP secret) never appear
//! in their `Debug` output.

use super::role::Role;
use crate::{DAY_MS, HOUR_MS, MINUTE_MS, Millis};
use serde::{Deserialize, Serialize};

/// A session's absolute life: 14 days.
pub const SESSION_MS: Millis = 14 * DAY_MS;
/// A session unused this long ends: 3 days.
pub const SESSION_IDLE_MS: Millis = 3 * DAY_MS;
/// A session's `last_seen` is written at most this often.
pub const TOUCH_EVERY_MS: Millis = 10 * MINUTE_MS;
/// A pending 2FA login's life: 5 minutes.
pub const CHALLENGE_MS: Millis = 5 * MINUTE_MS;
/// A setup token's life: 24 hours.
pub const SETUP_TOKEN_MS: Millis = DAY_MS;
/// An invite's life: 7 days.
pub const INVITE_MS: Millis = 7 * DAY_MS;
/// A password reset link's life when it is mailed on request
/// (`password/forgot`): 1 hour.
pub const RESET_MS: Millis = HOUR_MS;
/// A password reset link's life when the instance owner makes it (and may
/// have to pass it on by hand): 24 hours.
pub const OWNER_RESET_MS: Millis = DAY_MS;
/// Known browsers remembered per user.
pub const KNOWN_DEVICES: usize = 20;
/// The longest email accepted, in bytes.
pub const MAX_EMAIL: usize = 254;

/// A user of the console.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// The user id (16 hex).
    pub id: String,
    /// The email, lower case.
    pub email: String,
    /// The password's PHC string ([`super::password`]).
    pub password: String,
    /// The TOTP secret, base32, once set up (enabled or not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totp_secret: Option<String>,
    /// Whether 2FA is on.
    #[serde(default)]
    pub totp_enabled: bool,
    /// The last TOTP step accepted (no step is accepted twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totp_last_step: Option<i64>,
    /// Whether the user owns the instance.
    #[serde(default)]
    pub instance_owner: bool,
    /// When the user was created.
    pub created: Millis,
    /// Hashes of browsers that logged in ([`super::guess::device_hash`]),
    /// newest last, at most [`KNOWN_DEVICES`].
    #[serde(default)]
    pub known_devices: Vec<String>,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("id", &self.id)
            .field("totp_enabled", &self.totp_enabled)
            .field("instance_owner", &self.instance_owner)
            .finish_non_exhaustive()
    }
}

impl User {
    /// Whether the browser with this device hash logged in before.
    pub fn knows_device(&self, device_hash: &str) -> bool {
        self.known_devices.iter().any(|d| d == device_hash)
    }

    /// Remembers a browser that logged in; `false` if it was already the
    /// newest remembered (nothing to write).
    pub fn remember_device(&mut self, device_hash: &str) -> bool {
        if self.known_devices.last().is_some_and(|d| d == device_hash) {
            return false;
        }
        self.known_devices.retain(|d| d != device_hash);
        self.known_devices.push(device_hash.to_owned());
        let extra = self.known_devices.len().saturating_sub(KNOWN_DEVICES);
        self.known_devices.drain(..extra);
        true
    }

    /// The TOTP secret's bytes, when set.
    pub fn totp_bytes(&self) -> Option<Vec<u8>> {
        super::totp::base32_decode(self.totp_secret.as_deref()?)
    }
}

/// A signed-in browser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleSession {
    /// Hex SHA-256 of the token.
    pub hash: String,
    /// The user.
    pub uid: String,
    /// When it was created.
    pub created: Millis,
    /// When it ends whatever happens.
    pub expires: Millis,
    /// When it was last used (written at most every [`TOUCH_EVERY_MS`]).
    pub last_seen: Millis,
    /// What it is listed as ("Chrome on macOS"), never the user agent.
    pub label: String,
    /// The CSRF value state-changing requests carry.
    pub csrf: String,
}

impl ConsoleSession {
    /// A new session.
    pub fn new(hash: String, uid: &str, label: String, csrf: String, now: Millis) -> Self {
        Self {
            hash,
            uid: uid.to_owned(),
            created: now,
            expires: now + SESSION_MS,
            last_seen: now,
            label,
            csrf,
        }
    }

    /// Whether it is alive at `now`: before its end and used in the last
    /// [`SESSION_IDLE_MS`].
    pub fn is_live(&self, now: Millis) -> bool {
        now < self.expires && now - self.last_seen < SESSION_IDLE_MS
    }

    /// Whether `last_seen` should be written now.
    pub fn needs_touch(&self, now: Millis) -> bool {
        now - self.last_seen >= TOUCH_EVERY_MS
    }

    /// When its item may be deleted (TTL, seconds): when it could no longer
    /// be live.
    pub fn expires_s(&self) -> i64 {
        self.expires.min(self.last_seen + SESSION_IDLE_MS) / 1000 + 1
    }
}

/// A login that passed the password and waits for its 2FA code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingLogin {
    /// Hex SHA-256 of the challenge.
    pub hash: String,
    /// The user.
    pub uid: String,
    /// When it ends.
    pub expires: Millis,
}

impl PendingLogin {
    /// A pending login from `now`.
    pub fn new(hash: String, uid: &str, now: Millis) -> Self {
        Self {
            hash,
            uid: uid.to_owned(),
            expires: now + CHALLENGE_MS,
        }
    }
}

/// A user's role on a site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    /// The site.
    pub site: String,
    /// The user.
    pub uid: String,
    /// Their role.
    pub role: Role,
    /// Their email (for listing a site's members without reading users).
    pub email: String,
}

/// An invitation to a site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invite {
    /// Hex SHA-256 of the token.
    pub hash: String,
    /// The site.
    pub site: String,
    /// The role it grants.
    pub role: Role,
    /// Who it is for, if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// When it was made.
    pub created: Millis,
    /// When it ends.
    pub expires: Millis,
    /// The user who made it.
    pub by: String,
}

/// A one-time token that lets the first instance owner be created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupToken {
    /// Hex SHA-256 of the token.
    pub hash: String,
    /// When it was made.
    pub created: Millis,
    /// When it ends.
    pub expires: Millis,
}

impl SetupToken {
    /// A token made at `now`, good for [`SETUP_TOKEN_MS`].
    pub fn new(hash: String, now: Millis) -> Self {
        Self {
            hash,
            created: now,
            expires: now + SETUP_TOKEN_MS,
        }
    }
}

/// A single-use link that sets a user's password (`tr_…`), made by the
/// instance owner or mailed on request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasswordReset {
    /// Hex SHA-256 of the token.
    pub hash: String,
    /// The user whose password it sets.
    pub uid: String,
    /// When it was made.
    pub created: Millis,
    /// When it ends.
    pub expires: Millis,
    /// The instance owner who made it; `None`: mailed on request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl PasswordReset {
    /// A reset of `uid` made at `now`, good for `life`.
    pub fn new(hash: String, uid: &str, by: Option<String>, now: Millis, life: Millis) -> Self {
        Self {
            hash,
            uid: uid.to_owned(),
            created: now,
            expires: now + life,
            by,
        }
    }

    /// Whether it can still be used at `now`.
    pub fn is_live(&self, now: Millis) -> bool {
        now < self.expires
    }
}

/// Instance-wide settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceSettings {
    /// Every user must turn on 2FA before doing anything else.
    #[serde(default)]
    pub require_2fa: bool,
}

/// What an audit entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    /// The first instance owner was created.
    Setup,
    /// A user was created (CLI or invite).
    UserCreated,
    /// 2FA was turned on.
    TotpEnabled,
    /// 2FA was turned off.
    TotpDisabled,
    /// The instance settings changed.
    SettingsChanged,
    /// A session was revoked from another.
    SessionRevoked,
    /// A site's configuration changed.
    SiteChanged,
    /// A member was added, changed or removed.
    MemberChanged,
    /// An invite was made, accepted or revoked.
    InviteChanged,
    /// A key or shared link was made or revoked.
    CredentialChanged,
    /// A password reset link was made for a user (by the instance owner).
    PasswordReset,
    /// A password was set with a reset link, or changed by its user.
    PasswordChanged,
}

/// One audit entry, under `SITE#{site}` or `INSTANCE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When.
    pub at: Millis,
    /// 6 random hex, so entries of one millisecond do not collide.
    pub nonce: String,
    /// Who (user id).
    pub actor: String,
    /// Their email at the time.
    pub actor_email: String,
    /// What.
    pub action: AuditAction,
    /// On what (a user id, a site, a setting).
    #[serde(default)]
    pub target: String,
    /// More, for people (never a secret).
    #[serde(default)]
    pub detail: String,
}

/// Normalises an email: trimmed and lower case, one `@` with text either
/// side, no spaces or control characters, at most [`MAX_EMAIL`] bytes.
pub fn normalize_email(email: &str) -> Option<String> {
    let email = email.trim().to_lowercase();
    let (local, domain) = email.split_once('@')?;
    let ok = !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && email.len() <= MAX_EMAIL
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    ok.then_some(email)
}

/// A new address as Tally takes one to mail or to make an account with:
/// [`normalize_email`], then a conservative shape. The local part is
/// 1-64 ASCII characters of RFC 5322's dot-atom (no leading, trailing or
/// doubled dot); the domain is `localhost` (`tally dev`) or a dotted name
/// of letters, digits and hyphens whose last label is letters or an IDNA
/// `xn--` label; an internationalised domain is kept as its IDNA form,
/// and one that IDNA maps onto plain ASCII (full-width look-alikes of
/// `example.com`) is refused. Existing accounts still sign in by
/// [`normalize_email`] alone.
pub fn valid_email(email: &str) -> Option<String> {
    let email = normalize_email(email)?;
    let (local, domain) = email.split_once('@')?;
    let atom = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c);
    let local_ok = local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local.chars().all(|c| atom(c) || c == '.');
    if !local_ok {
        return None;
    }
    let domain = if domain.is_ascii() {
        domain.to_owned()
    } else {
        match url::Host::parse(domain).ok()? {
            url::Host::Domain(d) if d.split('.').any(|l| l.starts_with("xn--")) => d,
            _ => return None,
        }
    };
    if domain == "localhost" {
        return Some(format!("{local}@{domain}"));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    let label_ok = |l: &&str| {
        (1..=63).contains(&l.len())
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    let tld = labels.last().copied().unwrap_or_default();
    let tld_ok =
        tld.starts_with("xn--") || (tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()));
    (labels.len() >= 2 && labels.iter().all(label_ok) && tld_ok && domain.len() <= 253)
        .then(|| format!("{local}@{domain}"))
}

/// What a session is listed as: "Chrome on macOS", from the user agent,
/// which itself is never stored.
pub fn session_label(user_agent: &str) -> String {
    let ua = crate::ingest::classify::ua::classify_user_agent(user_agent);
    format!("{} on {}", ua.browser, ua.os)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        for (raw, normal) in [
            (" Ann@Example.COM ", Some("ann@example.com")),
            ("a@b", Some("a@b")),
            ("", None),
            ("ann", None),
            ("@example.com", None),
            ("ann@", None),
            ("a@b@c", None),
            ("a b@c", None),
            ("a\u{0}@c", None),
        ] {
            assert_eq!(normalize_email(raw).as_deref(), normal, "{raw:?}");
        }
        let long = format!("{}@example.com", "a".repeat(250));
        assert_eq!(normalize_email(&long), None);
    }

    #[test]
    fn new_addresses_have_a_conservative_shape() {
        for (raw, want) in [
            ("Ann.Lee+news@Example.COM", Some("ann.lee+news@example.com")),
            ("ops@sub.example.co.uk", Some("ops@sub.example.co.uk")),
            ("demo@localhost", Some("demo@localhost")),
            ("info@münchen.de", Some("info@xn--mnchen-3ya.de")),
            ("a@b", None),
            ("x@<script>.com", None),
            ("x@exa_mple.com", None),
            ("x@-example.com", None),
            ("x@example.c0m", None),
            ("x@example.com.", None),
            (".a@example.com", None),
            ("a..b@example.com", None),
            ("a\"b@example.com", None),
            ("ä@example.com", None),
            // Full-width look-alikes of example.com.
            (
                "x@\u{ff45}\u{ff58}\u{ff41}\u{ff4d}\u{ff50}\u{ff4c}\u{ff45}.com",
                None,
            ),
        ] {
            assert_eq!(valid_email(raw).as_deref(), want, "{raw:?}");
        }
    }

    #[test]
    fn sessions_end_absolutely_and_when_idle() {
        let s = ConsoleSession::new("h".into(), "u", "l".into(), "c".into(), 0);
        assert!(s.is_live(0));
        assert!(s.is_live(SESSION_IDLE_MS - 1));
        assert!(!s.is_live(SESSION_IDLE_MS));
        let mut used = s.clone();
        used.last_seen = SESSION_MS - 1;
        assert!(used.is_live(SESSION_MS - 1));
        assert!(!used.is_live(SESSION_MS));
        assert!(!s.needs_touch(TOUCH_EVERY_MS - 1));
        assert!(s.needs_touch(TOUCH_EVERY_MS));
        assert_eq!(s.expires_s(), SESSION_IDLE_MS / 1000 + 1);
    }

    #[test]
    fn known_devices_are_bounded_newest_last() {
        let mut user = User {
            id: "u".into(),
            email: "e".into(),
            password: "p".into(),
            totp_secret: Some("secret".into()),
            totp_enabled: false,
            totp_last_step: None,
            instance_owner: false,
            created: 0,
            known_devices: vec![],
        };
        for i in 0..30 {
            assert!(user.remember_device(&format!("d{i}")));
        }
        assert_eq!(user.known_devices.len(), KNOWN_DEVICES);
        assert!(user.knows_device("d29") && !user.knows_device("d0"));
        assert!(!user.remember_device("d29"));
        assert!(user.remember_device("d15"));
        assert_eq!(user.known_devices.last().map(String::as_str), Some("d15"));
        assert_eq!(user.known_devices.len(), KNOWN_DEVICES);
        let debug = format!("{user:?}");
        assert!(!debug.contains("secret") && !debug.contains("password:"));
    }

    #[test]
    fn labels_name_browser_and_system_only() {
        let ua = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
        assert_eq!(session_label(ua), "Chrome on macOS");
        assert_eq!(session_label(""), "Unknown on Unknown");
    }
}
