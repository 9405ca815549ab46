//! Start-up configuration shared by the three Lambdas and the CLI: the
//! table name and the salt secret.

use crate::salt::random_secret;
use tally_core::salt::Secret;

/// The table name: `TABLE_NAME`, or `tally`.
pub fn table_name() -> String {
    std::env::var("TABLE_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| crate::table::DEFAULT_TABLE_NAME.to_owned())
}

/// Whether this process runs in production (`TALLY_ENV=production`).
pub fn is_production() -> bool {
    std::env::var("TALLY_ENV").as_deref() == Ok("production")
}

/// The configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Production without a salt secret.
    #[error("TALLY_SALT_SECRET must be set (at least 32 characters) when TALLY_ENV=production")]
    MissingSecret,
}

/// The salt secret from `TALLY_SALT_SECRET`. Without it, production refuses
/// to start; elsewhere a random per-process secret is used with a loud
/// warning (visitor ids then agree across instances only through the shared
/// salt item).
pub fn salt_secret() -> Result<Secret, ConfigError> {
    secret_from(std::env::var("TALLY_SALT_SECRET").ok(), is_production())
}

/// The deployment secret that tags credentials (`tally_core::tag`):
/// `TALLY_SALT_SECRET` when set, else none (no random one: a tag made
/// under a secret no other process has would fail everywhere else).
pub fn tag_secret() -> Option<Secret> {
    std::env::var("TALLY_SALT_SECRET")
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| Secret::new(v.into_bytes()))
}

/// The tag keys a function accepts ([`tally_core::tag::TagKeys`]): the
/// deployment secret's ([`tag_secret`]), and after a rotation the previous
/// secret's (`TALLY_PREVIOUS_SECRET`) until `TALLY_PREVIOUS_SECRET_UNTIL`
/// (a UTC date, `YYYY-MM-DD`: accepted before its midnight). None without
/// a deployment secret; a previous secret without a valid date is
/// ignored, with a warning.
pub fn tag_keys() -> Option<tally_core::tag::TagKeys> {
    let current = tag_secret()?;
    let previous = std::env::var("TALLY_PREVIOUS_SECRET")
        .ok()
        .filter(|v| !v.is_empty());
    let until = std::env::var("TALLY_PREVIOUS_SECRET_UNTIL").ok();
    Some(tag_keys_from(
        &current,
        previous.as_deref(),
        until.as_deref(),
    ))
}

/// [`tag_keys`] with its inputs passed in.
pub fn tag_keys_from(
    current: &Secret,
    previous: Option<&str>,
    until: Option<&str>,
) -> tally_core::tag::TagKeys {
    use tally_core::tag::{TagKey, TagKeys};
    let keys = TagKeys::new(TagKey::derive(current));
    let Some(previous) = previous else {
        return keys;
    };
    match until.and_then(tally_core::zone::parse_date) {
        Some(day) => keys.with_previous(
            TagKey::derive(&Secret::new(previous.as_bytes().to_vec())),
            tally_core::zone::utc_midnight(day),
        ),
        None => {
            tracing::warn!(
                "TALLY_PREVIOUS_SECRET without a TALLY_PREVIOUS_SECRET_UNTIL date (YYYY-MM-DD): the previous secret is not accepted"
            );
            keys
        }
    }
}

/// [`salt_secret`] with its inputs passed in.
pub fn secret_from(value: Option<String>, production: bool) -> Result<Secret, ConfigError> {
    match value.filter(|v| !v.is_empty()) {
        Some(v) if !production || v.len() >= 32 => Ok(Secret::new(v.into_bytes())),
        _ if production => Err(ConfigError::MissingSecret),
        _ => {
            tracing::warn!(
                "TALLY_SALT_SECRET is not set: using a random per-process secret; set it in production"
            );
            Ok(random_secret())
        }
    }
}
