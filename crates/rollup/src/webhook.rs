//! The HTTP client alerts are posted with (Slack incoming webhooks, the
//! generic signed webhook): hyper 1 with rustls on ring and the system's
//! roots, the stack the AWS SDK client already links, so the job's binary
//! gains no second TLS or HTTP implementation. HTTP/1.1, no redirects
//! followed, a connect timeout and a timeout on the whole exchange; only
//! the status is read, never the body. Plain `http` is only ever reached
//! for URLs `tally_core::product::alert::check_url` let through (this machine, in
//! `tally dev` and tests).
//!
//! Nothing inside is reached (issue 29, item 2): the host is checked again
//! at connect time (`tally_core::product::outbound::check_host`, an address literal
//! by `special_purpose`), its name is resolved once by [`Guarded`], which
//! refuses the whole answer when any address in it is internal or
//! special-purpose, and the connector connects to the addresses that
//! answer holds: no second resolution, so a name cannot rebind between
//! the check and the connect. Only `Webhooks::new(true)` (`tally dev`,
//! tests) lets loopback through.

use crate::alerts::{PostFuture, Poster};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::TokioExecutor;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tally_core::product::outbound::{check_host, special_purpose};

/// How long a connection may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a whole request (connect, send, the response's head) may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A name's addresses, as the system's resolver (or a test's) answers.
pub type LookupFuture = Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>;

/// Resolves host names.
pub trait Lookup: Send + Sync {
    /// Every address of `host`.
    fn lookup(&self, host: &str) -> LookupFuture;
}

/// The system's resolver.
#[derive(Debug, Clone, Copy)]
pub struct System;

impl Lookup for System {
    fn lookup(&self, host: &str) -> LookupFuture {
        let host = host.to_owned();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

/// The connector's resolver: one lookup, and the whole answer refused
/// when any address in it is special-purpose (unless `allow_local`).
#[derive(Clone)]
pub struct Guarded {
    lookup: Arc<dyn Lookup>,
    allow_local: bool,
}

impl tower_service::Service<Name> for Guarded {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let lookup = self.lookup.clone();
        let allow_local = self.allow_local;
        Box::pin(async move {
            let addrs = lookup.lookup(name.as_str()).await?;
            let refused =
                addrs.is_empty() || (!allow_local && addrs.iter().any(|ip| special_purpose(*ip)));
            if refused {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "an internal address",
                ));
            }
            Ok(addrs
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect::<Vec<_>>()
                .into_iter())
        })
    }
}

/// Posts JSON to webhook URLs.
#[derive(Clone)]
pub struct Webhooks {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector<Guarded>>, Full<Bytes>>,
    allow_local: bool,
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
    /// A client with the system's trust roots and resolver; `allow_local`
    /// (`tally dev`, tests) lets it reach this machine.
    pub fn new(allow_local: bool) -> Result<Self, ClientError> {
        Self::with_lookup(Arc::new(System), allow_local)
    }

    /// The same with another resolver (tests: a name that resolves to
    /// loopback, a rebinding one).
    pub fn with_lookup(lookup: Arc<dyn Lookup>, allow_local: bool) -> Result<Self, ClientError> {
        let mut http = HttpConnector::new_with_resolver(Guarded {
            lookup,
            allow_local,
        });
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
        Ok(Self {
            client,
            allow_local,
        })
    }

    /// Sends a request within [`REQUEST_TIMEOUT`]: the status, or the
    /// kind of failure (the error's text may hold the URL: only its kind
    /// is said).
    async fn send(&self, request: hyper::Request<Full<Bytes>>) -> Result<u16, String> {
        match tokio::time::timeout(REQUEST_TIMEOUT, self.client.request(request)).await {
            Ok(Ok(response)) => Ok(response.status().as_u16()),
            Ok(Err(e)) if e.is_connect() => Err("could not connect".to_owned()),
            Ok(Err(_)) => Err("request failed".to_owned()),
            Err(_) => Err("timed out".to_owned()),
        }
    }

    /// The URL's host checked again as it is about to be reached: a name
    /// by [`check_host`], an address literal (which no resolver sees) by
    /// [`special_purpose`].
    fn refuses(&self, url: &str) -> bool {
        if self.allow_local {
            return false;
        }
        match url::Url::parse(url)
            .ok()
            .and_then(|u| u.host().map(|h| h.to_owned()))
        {
            Some(url::Host::Domain(d)) => check_host(&d).is_err(),
            Some(url::Host::Ipv4(ip)) => special_purpose(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => special_purpose(IpAddr::V6(ip)),
            None => true,
        }
    }
}

impl crate::first_owner::Responder for Webhooks {
    fn put<'a>(&'a self, url: &'a str, body: String) -> PostFuture<'a> {
        Box::pin(async move {
            if self.refuses(url) {
                return Err("refused: an internal address".to_owned());
            }
            // A presigned S3 URL: signed without a content type.
            let request = hyper::Request::put(url)
                .header("content-type", "")
                .body(Full::new(Bytes::from(body)))
                .map_err(|_| "invalid request".to_owned())?;
            self.send(request).await
        })
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
            if self.refuses(url) {
                return Err("refused: an internal address".to_owned());
            }
            let mut request = hyper::Request::post(url)
                .header("content-type", "application/json")
                .header("user-agent", "Tally-Alerts/1");
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            let request = request
                .body(Full::new(Bytes::from(body)))
                .map_err(|_| "invalid request".to_owned())?;
            self.send(request).await
        })
    }
}
