//! Sending through Amazon SES (API v2 `SendEmail`), with the same HTTP
//! client as the DynamoDB adapter: hyper with rustls on ring, no aws-lc.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use crate::{MailError, Message};
use aws_config::BehaviorVersion;
use aws_sdk_sesv2::Client;
use aws_sdk_sesv2::config::{Credentials, Region, SharedHttpClient};
use aws_sdk_sesv2::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sesv2::types::{Body, Content, Destination, EmailContent};
use aws_smithy_types::retry::RetryConfig;
use aws_smithy_types::timeout::TimeoutConfig;
use std::time::Duration;

/// How to reach SES and whom mail is from.
#[derive(Clone, Debug, Default)]
pub struct SesOptions {
    /// The From address (`EMAIL_FROM`), e.g. `Tally <tally@example.com>`:
    /// an identity verified in SES (the address or its domain).
    pub from: String,
    /// An SES-compatible endpoint (`SES_ENDPOINT`, for tests); `None` for
    /// AWS.
    pub endpoint: Option<String>,
    /// The region; defaults to the environment's, or `us-east-1` with an
    /// endpoint.
    pub region: Option<String>,
    /// The whole-operation timeout (all attempts), default 5 s.
    pub operation_timeout: Option<Duration>,
    /// The configuration set every message is sent with
    /// (`SES_CONFIGURATION_SET`): its bounces and complaints are
    /// suppressed and reported (`template.yaml`, `MailConfigurationSet`).
    pub configuration_set: Option<String>,
}

impl SesOptions {
    /// Options from the environment: `EMAIL_FROM`, `SES_ENDPOINT`,
    /// `AWS_REGION`, `SES_CONFIGURATION_SET`; `None` when `EMAIL_FROM` is
    /// unset or empty (mail is not sent).
    pub fn from_env() -> Option<Self> {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
        };
        Some(Self {
            from: var("EMAIL_FROM")?,
            endpoint: var("SES_ENDPOINT"),
            region: var("AWS_REGION"),
            operation_timeout: None,
            configuration_set: var("SES_CONFIGURATION_SET"),
        })
    }

    /// Options for a local SES-compatible endpoint.
    pub fn local(endpoint: &str, from: &str) -> Self {
        Self {
            from: from.to_owned(),
            endpoint: Some(endpoint.to_owned()),
            ..Self::default()
        }
    }
}

/// The HTTP client: hyper with rustls on ring (HTTPS to AWS, plain HTTP to
/// a local endpoint), as `tally_store::client::http_client` builds it.
fn http_client() -> SharedHttpClient {
    use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

/// Sends mail through SES from one configured address.
#[derive(Clone, Debug)]
pub struct Ses {
    client: Client,
    from: String,
    configuration_set: Option<String>,
}

impl Ses {
    /// Builds the SES client. With an endpoint and no credentials in the
    /// environment, static local credentials are used, so no credential
    /// chain runs in a test.
    pub async fn connect(options: &SesOptions) -> Result<Self, MailError> {
        if options.from.trim().is_empty() {
            return Err(MailError::Config("EMAIL_FROM is empty"));
        }
        let timeout = TimeoutConfig::builder()
            .operation_timeout(options.operation_timeout.unwrap_or(Duration::from_secs(5)))
            .operation_attempt_timeout(Duration::from_secs(3))
            .connect_timeout(Duration::from_secs(1))
            .build();
        let retry = RetryConfig::standard().with_max_attempts(3);
        let builder = match &options.endpoint {
            Some(endpoint) => {
                let region = options
                    .region
                    .clone()
                    .unwrap_or_else(|| "us-east-1".to_owned());
                let mut b = aws_sdk_sesv2::Config::builder()
                    .behavior_version(BehaviorVersion::latest())
                    .http_client(http_client())
                    .endpoint_url(endpoint)
                    .region(Region::new(region));
                let shared = if std::env::var("AWS_ACCESS_KEY_ID").is_ok() {
                    aws_config::defaults(BehaviorVersion::latest())
                        .http_client(http_client())
                        .load()
                        .await
                        .credentials_provider()
                } else {
                    None
                };
                match shared {
                    Some(provider) => b = b.credentials_provider(provider),
                    None => {
                        b = b.credentials_provider(Credentials::new(
                            "local",
                            "local",
                            None,
                            None,
                            "tally-local",
                        ))
                    }
                }
                b
            }
            None => {
                let mut loader =
                    aws_config::defaults(BehaviorVersion::latest()).http_client(http_client());
                if let Some(region) = &options.region {
                    loader = loader.region(Region::new(region.clone()));
                }
                aws_sdk_sesv2::config::Builder::from(&loader.load().await)
            }
        };
        let config = builder.timeout_config(timeout).retry_config(retry).build();
        Ok(Self {
            configuration_set: options.configuration_set.clone(),
            ..Self::with_client(Client::from_conf(config), options.from.trim())
        })
    }

    /// From an SDK client already built.
    pub fn with_client(client: Client, from: &str) -> Self {
        Self {
            client,
            from: from.to_owned(),
            configuration_set: None,
        }
    }

    /// The From address.
    pub fn from_address(&self) -> &str {
        &self.from
    }

    /// The SDK client (for set-up in tests, e.g. `CreateEmailIdentity`).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Sends `message` (UTF-8 text, its HTML part and headers if any);
    /// returns SES's message id.
    pub async fn send(&self, message: &Message) -> Result<String, MailError> {
        if message.to.trim().is_empty() {
            return Err(MailError::Config("the recipient is empty"));
        }
        let content = |data: &str| {
            Content::builder()
                .data(data)
                .charset("UTF-8")
                .build()
                .map_err(|_| MailError::Config("a mail's content could not be built"))
        };
        let mut body = Body::builder().text(content(&message.text)?);
        if let Some(html) = &message.html {
            body = body.html(content(html)?);
        }
        let mut simple = aws_sdk_sesv2::types::Message::builder()
            .subject(content(&message.subject)?)
            .body(body.build());
        for (name, value) in &message.headers {
            simple = simple.headers(
                aws_sdk_sesv2::types::MessageHeader::builder()
                    .name(name)
                    .value(value)
                    .build()
                    .map_err(|_| MailError::Config("a mail header could not be built"))?,
            );
        }
        let simple = simple.build();
        let sent = self
            .client
            .send_email()
            .from_email_address(&self.from)
            .set_configuration_set_name(self.configuration_set.clone())
            .destination(Destination::builder().to_addresses(&message.to).build())
            .content(EmailContent::builder().simple(simple).build())
            .send()
            .await
            .map_err(from_sdk)?;
        let id = sent.message_id().unwrap_or_default().to_owned();
        // The id only: the recipient and the body (its links carry tokens)
        // are never logged.
        tracing::info!(message_id = %id, "mail sent");
        Ok(id)
    }
}

/// Maps an SDK error to a [`MailError`], keeping SES's message (which may
/// name an address) out of its `Display`.
fn from_sdk<E, R>(err: SdkError<E, R>) -> MailError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let detail = aws_sdk_sesv2::error::DisplayErrorContext(&err).to_string();
    let unavailable = |kind: &str| MailError::Unavailable {
        kind: kind.to_owned(),
        detail: detail.clone(),
    };
    match &err {
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or("Unknown");
            match code {
                "InternalFailure" | "InternalServerError" | "ServiceUnavailable" => {
                    unavailable(code)
                }
                _ => MailError::Rejected {
                    code: code.to_owned(),
                    detail: detail.clone(),
                },
            }
        }
        SdkError::TimeoutError(_) => unavailable("timed out"),
        SdkError::DispatchFailure(_) => unavailable("connection failed"),
        SdkError::ResponseError(_) => unavailable("malformed response"),
        _ => unavailable("request not built"),
    }
}
