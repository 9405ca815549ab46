//! Start-up configuration shared by the three Lambdas and the CLI: the
//! table name and the salt secret.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use crate::salt::random_secret;
use tally_core::ingest::salt::Secret;

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

/// The deployment secret that tags credentials (`tally_core::account::tag`) for
/// the CLI: `TALLY_SALT_SECRET` when set, else none (no random one: a tag
/// made under a secret no other process has would fail everywhere else).
/// The functions read theirs with `tally_lambda::secrets`.
pub fn tag_secret() -> Option<Secret> {
    std::env::var("TALLY_SALT_SECRET")
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| Secret::new(v.into_bytes()))
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
