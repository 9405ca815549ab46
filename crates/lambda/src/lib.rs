//! `tally-lambda`: what the Lambda functions (and `tally dev`) share at the
//! edge, so `tally-store` stays DynamoDB and nothing else.
//!
//! - [`error_body`]: the `{"error": {"code", "message"}}` body every HTTP
//!   door answers an error with.
//! - [`logging`]: structured JSON logs on stderr.
//! - [`request`]: what an HTTP request says about its client.
//! - [`metrics`]: CloudWatch Embedded Metric Format lines on stdout.
//! - [`page`]: the HTML pages' security headers (a CSP of hashes).
//! - [`secrets`]: the deployment secret and the origin secret, read once
//!   at cold start (Secrets Manager on AWS, never the environment).
//! - [`VERSION`]: the release every function, log line and `/health`
//!   answer names.

pub mod error_body;
pub mod logging;
pub mod metrics;
pub mod page;
pub mod request;
pub mod secrets;

/// The release (the workspace version, CHANGELOG.md): in every log line,
/// every `/health` answer and each function's description in
/// `template.yaml`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
