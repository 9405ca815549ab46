//! How the console runs: the key that hashes client networks for the guess
//! limits, the request body bound, the issuer shown by authenticator apps.

use tally_core::salt::{DailySalt, Secret, daily_salt};

/// Largest JSON body a console route reads.
pub const MAX_BODY: usize = 16 * 1024;

/// The console's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Keys the hash of a client's network (shared by every instance, so
    /// guess windows agree; never the network itself).
    pub network_key: DailySalt,
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// The issuer name in `otpauth://` URLs.
    pub issuer: String,
}

impl Config {
    /// The configuration with networks keyed from the salt secret.
    pub fn new(secret: &Secret) -> Self {
        Self {
            // A derivation of its own: no visitor salt is of this date.
            network_key: daily_salt(secret, time::Date::MIN),
            max_body: MAX_BODY,
            issuer: "Tally".to_owned(),
        }
    }
}
