//! How the console runs: the key that hashes client networks for the guess
//! limits, the key that tags the credentials it makes, the request body
//! bound, the issuer shown by authenticator apps,
//! the public URLs links are made of, and the mailer.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use crate::mail::Mailer;
use std::sync::Arc;
use tally_core::account::tag::{TagKey, TagKeys};
use tally_core::ingest::salt::{DailySalt, Secret, daily_salt};
use tally_mail::{MailError, Ses, SesOptions};

/// Largest JSON body a console route reads.
pub const MAX_BODY: usize = 16 * 1024;

/// The console's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Keys the hash of a client's network (shared by every instance, so
    /// guess windows agree; never the network itself).
    pub network_key: DailySalt,
    /// Tags the API keys, shared links and sessions it makes with the
    /// current key, and checks keys against it and, after a rotation, the
    /// previous one until its time (`tally_core::account::tag`).
    pub tag_keys: TagKeys,
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// The issuer name in `otpauth://` URLs.
    pub issuer: String,
    /// The ingest function's public URL, for snippets (`INGEST_URL`;
    /// unset: the request's own origin, as in `tally dev`).
    pub ingest_url: Option<String>,
    /// The console's public origin, for invite and shared links
    /// (`PUBLIC_URL`; unset: the request's own origin).
    pub public_url: Option<String>,
    /// Sends invitations (SES when `EMAIL_FROM` is set; the outbox in
    /// `tally dev`; none: links are only returned).
    pub mailer: Option<Arc<dyn Mailer>>,
    /// Accept plain `http` alert webhooks to this machine (`tally dev`,
    /// tests; `tally alert set --allow-local`); never on AWS.
    pub allow_local_urls: bool,
}

impl Config {
    /// The configuration with networks keyed from the salt secret.
    pub fn new(secret: &Secret) -> Self {
        Self {
            // A derivation of its own: no visitor salt is of this date.
            network_key: daily_salt(secret, time::Date::MIN),
            tag_keys: TagKeys::new(TagKey::derive(secret)),
            max_body: MAX_BODY,
            issuer: "Tally".to_owned(),
            ingest_url: None,
            public_url: None,
            mailer: None,
            allow_local_urls: false,
        }
    }

    /// [`Config::new`] with what the environment sets: `INGEST_URL`,
    /// `PUBLIC_URL` and SES as the mailer when `EMAIL_FROM` is set; the
    /// tag keys accepted (after a rotation, the previous secret's too:
    /// [`tally_lambda::secrets::Deployment`]) when given, else the
    /// secret's own.
    pub async fn from_env(secret: &Secret, tag_keys: Option<TagKeys>) -> Result<Self, MailError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let mailer: Option<Arc<dyn Mailer>> = match SesOptions::from_env() {
            Some(options) => Some(Arc::new(Ses::connect(&options).await?)),
            None => None,
        };
        let config = Self::new(secret);
        Ok(Self {
            ingest_url: var("INGEST_URL"),
            public_url: var("PUBLIC_URL"),
            mailer,
            // The previous secret's keys too, after a rotation.
            tag_keys: tag_keys.unwrap_or(config.tag_keys.clone()),
            ..config
        })
    }

    /// This configuration sending mail with `mailer`.
    #[must_use]
    pub fn with_mailer(mut self, mailer: impl Mailer + 'static) -> Self {
        self.mailer = Some(Arc::new(mailer));
        self
    }

    /// This configuration accepting plain `http` alert webhooks to this
    /// machine, as `tally dev` runs it.
    #[must_use]
    pub fn allowing_local_urls(mut self) -> Self {
        self.allow_local_urls = true;
        self
    }
}
