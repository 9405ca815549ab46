//! The HTTP client alerts are posted with (Slack incoming webhooks, the
//! generic signed webhook): hyper 1 with rustls on ring and the system's
//! roots, the stack the AWS SDK client already links, so the job's binary
//! gains no second TLS or HTTP implementation. HTTP/1.1, no redirects
//! followed, a connect timeout and a timeout on the whole exchange; only
//! the status is read, never the body. Plain `http` is only ever reached
//! for URLs `tally_core::alert::check_url` let through (this machine, in
//! `tally dev` and tests).

use crate::alerts::{PostFuture, Poster};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// How long a connection may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a whole request (connect, send, the response's head) may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Posts JSON to webhook URLs.
#[derive(Clone)]
pub struct Webhooks {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Webhooks")
    }
}

/// The client could not be built (no system roots).
#[derive(Debug, thiserror::Error)]
#[error("webhook client: {0}")]
pub struct ClientError(String);

impl Webhooks {
    /// A client with the system's trust roots.
    pub fn new() -> Result<Self, ClientError> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| ClientError(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(https);
        Ok(Self { client })
    }
}

impl Poster for Webhooks {
    fn post<'a>(
        &'a self,
        url: &'a str,
        headers: &'a [(&'static str, String)],
        body: String,
    ) -> PostFuture<'a> {
        Box::pin(async move {
            let mut request = hyper::Request::post(url)
                .header("content-type", "application/json")
                .header("user-agent", "Tally-Alerts/1");
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            let request = request
                .body(Full::new(Bytes::from(body)))
                .map_err(|_| "invalid request".to_owned())?;
            match tokio::time::timeout(REQUEST_TIMEOUT, self.client.request(request)).await {
                Ok(Ok(response)) => Ok(response.status().as_u16()),
                // The error's text may hold the URL: only its kind is said.
                Ok(Err(e)) if e.is_connect() => Err("could not connect".to_owned()),
                Ok(Err(_)) => Err("request failed".to_owned()),
                Err(_) => Err("timed out".to_owned()),
            }
        })
    }
}
