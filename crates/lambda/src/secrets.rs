//! The deployment's secrets, read once at cold start.
//!
//! On AWS no secret is in a function's environment: `template.yaml` makes
//! two AWS Secrets Manager secrets and gives each function only the ARN
//! of the one it needs, with `secretsmanager:GetSecretValue` on that ARN
//! alone.
//!
//! - The **deployment secret** (`TALLY_SECRET_ARN`; query and console)
//!   keys the credential tags of API keys, shared links and console
//!   sessions ([`tally_core::account::tag`]). Rotating it is one
//!   `aws secretsmanager put-secret-value`: Secrets Manager moves the old
//!   value to the `AWSPREVIOUS` stage, and a function accepts tags made
//!   under it until `TALLY_SECRET_GRACE_DAYS` (default 7) days after the
//!   new value was made, so nothing breaks at once.
//! - The **origin secret** (`TALLY_ORIGIN_SECRET_ARN`; ingest behind
//!   CloudFront): the header CloudFront adds to every origin request
//!   ([`crate::request::OriginVerify`]).
//!
//! Without an ARN (`tally dev`, the tests, the CLI) the values come from
//! `TALLY_SALT_SECRET`, `TALLY_PREVIOUS_SECRET` with
//! `TALLY_PREVIOUS_SECRET_UNTIL`, and `TALLY_ORIGIN_SECRET`.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use aws_config::BehaviorVersion;
use aws_sdk_secretsmanager::Client;
use aws_sdk_secretsmanager::config::{Credentials, Region, SharedHttpClient};
use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_types::retry::RetryConfig;
use aws_smithy_types::timeout::TimeoutConfig;
use std::time::Duration;
use tally_core::Millis;
use tally_core::account::tag::{TagKey, TagKeys};
use tally_core::ingest::salt::Secret;

/// Days a rotated-out deployment secret is still accepted, unless
/// `TALLY_SECRET_GRACE_DAYS` says otherwise.
pub const DEFAULT_GRACE_DAYS: i64 = 7;

/// The shortest deployment secret production accepts.
pub const MIN_SECRET: usize = 32;

const DAY_MS: Millis = 86_400_000;

/// A secret could not be read: the function does not start.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// Secrets Manager refused or failed a read or a write (the code and
    /// message it gave, never the value).
    #[error("secret {arn}: {reason}")]
    Read {
        /// The secret's ARN (not a secret).
        arn: String,
        /// What Secrets Manager said.
        reason: String,
    },
    /// The secret holds no text, or text too short for production.
    #[error("secret {0}: no value of at least {MIN_SECRET} characters")]
    Short(String),
    /// Production without any deployment secret.
    #[error(
        "no deployment secret: set TALLY_SECRET_ARN (template.yaml does) or TALLY_SALT_SECRET (at least {MIN_SECRET} characters)"
    )]
    Missing,
}

/// One secret's value and when it was made.
#[derive(Clone)]
pub struct Version {
    /// The value.
    pub value: String,
    /// When this version was made (Secrets Manager's `CreatedDate`).
    pub created: Millis,
}

impl std::fmt::Debug for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Version(<redacted>, created {})", self.created)
    }
}

/// The deployment secret as a function uses it.
#[derive(Clone, Debug)]
pub struct Deployment {
    /// The current secret.
    pub secret: Secret,
    /// The tag keys accepted: the current secret's, and the previous
    /// one's until its grace ends.
    pub tag_keys: TagKeys,
}

/// The [`Deployment`] of a current value and, after a rotation, the
/// previous value accepted until `until`.
pub fn deployment_of(current: &str, previous: Option<(&str, Millis)>) -> Deployment {
    let secret = Secret::new(current.as_bytes().to_vec());
    let keys = TagKeys::new(TagKey::derive(&secret));
    let tag_keys = match previous {
        Some((value, until)) => keys.with_previous(
            TagKey::derive(&Secret::new(value.as_bytes().to_vec())),
            until,
        ),
        None => keys,
    };
    Deployment { secret, tag_keys }
}

/// When a previous secret stops being accepted: `grace_days` after the
/// current one was made.
pub fn grace_end(current_created: Millis, grace_days: i64) -> Millis {
    current_created.saturating_add(grace_days.max(0).saturating_mul(DAY_MS))
}

/// A Secrets Manager client for the function's region (with an endpoint,
/// for tests: that endpoint, and static local credentials unless the
/// environment has some).
#[derive(Clone, Debug)]
pub struct Secrets {
    client: Client,
}

/// The HTTP client: hyper with rustls on ring, as the store's and the
/// mailer's (no aws-lc).
fn http_client() -> SharedHttpClient {
    use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

impl Secrets {
    /// The client: AWS's endpoint of the environment's region, or
    /// `endpoint` (`SECRETS_ENDPOINT`, for tests).
    pub async fn connect(endpoint: Option<&str>) -> Self {
        let timeout = TimeoutConfig::builder()
            .operation_timeout(Duration::from_secs(5))
            .operation_attempt_timeout(Duration::from_secs(2))
            .connect_timeout(Duration::from_secs(1))
            .build();
        let retry = RetryConfig::standard().with_max_attempts(3);
        let client = match endpoint {
            Some(endpoint) => {
                let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_owned());
                let mut builder = aws_sdk_secretsmanager::Config::builder()
                    .behavior_version(BehaviorVersion::latest())
                    .http_client(http_client())
                    .endpoint_url(endpoint)
                    .region(Region::new(region))
                    .timeout_config(timeout)
                    .retry_config(retry);
                let shared = if std::env::var("AWS_ACCESS_KEY_ID").is_ok() {
                    aws_config::defaults(BehaviorVersion::latest())
                        .http_client(http_client())
                        .load()
                        .await
                        .credentials_provider()
                } else {
                    None
                };
                builder = match shared {
                    Some(provider) => builder.credentials_provider(provider),
                    None => builder.credentials_provider(Credentials::new(
                        "local",
                        "local",
                        None,
                        None,
                        "tally-local",
                    )),
                };
                Client::from_conf(builder.build())
            }
            None => {
                let shared = aws_config::defaults(BehaviorVersion::latest())
                    .http_client(http_client())
                    .timeout_config(timeout)
                    .retry_config(retry)
                    .load()
                    .await;
                Client::new(&shared)
            }
        };
        Self { client }
    }

    /// The underlying client (tests make and rotate secrets with it).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The version of `arn` at `stage` (`AWSCURRENT`, `AWSPREVIOUS`);
    /// `None` when the secret has no version at that stage.
    pub async fn version(&self, arn: &str, stage: &str) -> Result<Option<Version>, SecretError> {
        let read = self
            .client
            .get_secret_value()
            .secret_id(arn)
            .version_stage(stage)
            .send()
            .await;
        let out = match read {
            Ok(out) => out,
            Err(SdkError::ServiceError(e)) if e.err().is_resource_not_found_exception() => {
                return Ok(None);
            }
            Err(e) => return Err(failed(arn, &e)),
        };
        let created = out
            .created_date()
            .map_or(0, |d| d.secs().saturating_mul(1000));
        Ok(out.secret_string().map(|value| Version {
            value: value.to_owned(),
            created,
        }))
    }

    /// Writes `value` as the new current version of `arn` (the first
    /// owner's setup link: `tally_rollup::first_owner`).
    pub async fn put(&self, arn: &str, value: &str) -> Result<(), SecretError> {
        self.client
            .put_secret_value()
            .secret_id(arn)
            .secret_string(value)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| failed(arn, &e))
    }

    /// The deployment secret of `arn`: its current value, and its previous
    /// one (after a rotation) until `grace_days` after the current was
    /// made.
    pub async fn deployment(&self, arn: &str, grace_days: i64) -> Result<Deployment, SecretError> {
        // Both stages at once: one round trip of cold start, not two.
        let (current, previous) = tokio::join!(
            self.version(arn, "AWSCURRENT"),
            self.version(arn, "AWSPREVIOUS")
        );
        let current = current?
            .filter(|v| v.value.len() >= MIN_SECRET)
            .ok_or_else(|| SecretError::Short(arn.to_owned()))?;
        let previous = previous?;
        let until = grace_end(current.created, grace_days);
        Ok(deployment_of(
            &current.value,
            previous
                .as_ref()
                .filter(|p| !p.value.is_empty())
                .map(|p| (p.value.as_str(), until)),
        ))
    }
}

/// What Secrets Manager said when a call on `arn` failed (its code and
/// message; never a value).
fn failed<E, R>(arn: &str, e: &SdkError<E, R>) -> SecretError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let reason = match e.code() {
        Some(code) => format!("{code}: {}", e.message().unwrap_or_default()),
        None => e.to_string(),
    };
    SecretError::Read {
        arn: arn.to_owned(),
        reason,
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn is_production() -> bool {
    std::env::var("TALLY_ENV").as_deref() == Ok("production")
}

/// The deployment secret for this process: from `TALLY_SECRET_ARN` when
/// set (grace `TALLY_SECRET_GRACE_DAYS`), else from `TALLY_SALT_SECRET`
/// (a previous one from `TALLY_PREVIOUS_SECRET`, accepted before the UTC
/// midnight of `TALLY_PREVIOUS_SECRET_UNTIL`, `YYYY-MM-DD`). `None`
/// without either outside production; production refuses to start
/// without one ([`SecretError::Missing`]) or with one shorter than
/// [`MIN_SECRET`].
pub async fn deployment() -> Result<Option<Deployment>, SecretError> {
    if let Some(arn) = var("TALLY_SECRET_ARN") {
        let grace = var("TALLY_SECRET_GRACE_DAYS")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_GRACE_DAYS);
        let secrets = Secrets::connect(var("SECRETS_ENDPOINT").as_deref()).await;
        return secrets.deployment(&arn, grace).await.map(Some);
    }
    let Some(current) = var("TALLY_SALT_SECRET") else {
        return if is_production() {
            Err(SecretError::Missing)
        } else {
            Ok(None)
        };
    };
    if is_production() && current.len() < MIN_SECRET {
        return Err(SecretError::Short("TALLY_SALT_SECRET".to_owned()));
    }
    let previous = var("TALLY_PREVIOUS_SECRET");
    let until =
        var("TALLY_PREVIOUS_SECRET_UNTIL").and_then(|d| tally_core::time::zone::parse_date(&d));
    if previous.is_some() && until.is_none() {
        tracing::warn!(
            "TALLY_PREVIOUS_SECRET without a TALLY_PREVIOUS_SECRET_UNTIL date (YYYY-MM-DD): the previous secret is not accepted"
        );
    }
    let previous = previous
        .as_deref()
        .zip(until.map(tally_core::time::zone::utc_midnight));
    Ok(Some(deployment_of(&current, previous)))
}

/// The origin secret for this process: the current value of
/// `TALLY_ORIGIN_SECRET_ARN` when set, else `TALLY_ORIGIN_SECRET`, else
/// none.
pub async fn origin() -> Result<Option<String>, SecretError> {
    match var("TALLY_ORIGIN_SECRET_ARN") {
        Some(arn) => {
            let secrets = Secrets::connect(var("SECRETS_ENDPOINT").as_deref()).await;
            Ok(secrets.version(&arn, "AWSCURRENT").await?.map(|v| v.value))
        }
        None => Ok(var("TALLY_ORIGIN_SECRET")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grace_ends_whole_days_after_the_new_value() {
        assert_eq!(grace_end(1_000, 7), 1_000 + 7 * DAY_MS);
        assert_eq!(grace_end(1_000, 0), 1_000);
        assert_eq!(grace_end(1_000, -3), 1_000, "no negative grace");
    }

    #[test]
    fn a_version_never_prints_its_value() {
        let v = Version {
            value: "super secret value".to_owned(),
            created: 5,
        };
        assert!(!format!("{v:?}").contains("super"));
    }
}
