//! Building the DynamoDB client: endpoint, region, timeouts, retries, and an
//! optional interceptor that counts every request by operation.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{
    BehaviorVersion, ConfigBag, Credentials, Intercept, Region, RuntimeComponents,
};
use aws_smithy_types::retry::RetryConfig;
use aws_smithy_types::timeout::TimeoutConfig;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How to reach DynamoDB.
#[derive(Clone, Debug, Default)]
pub struct ClientOptions {
    /// A DynamoDB-compatible endpoint (`DYNAMODB_ENDPOINT`); `None` for AWS.
    pub endpoint: Option<String>,
    /// The region; defaults to the environment's, or `us-east-1` locally.
    pub region: Option<String>,
    /// The whole-operation timeout (all attempts), default 3 s.
    pub operation_timeout: Option<Duration>,
    /// The timeout of one attempt, default 2 s.
    pub attempt_timeout: Option<Duration>,
    /// Maximum attempts per request (default 3).
    pub max_attempts: Option<u32>,
    /// Counts every request sent, when set.
    pub counter: Option<Arc<RequestCounter>>,
}

impl ClientOptions {
    /// Options from the environment: `DYNAMODB_ENDPOINT`, `AWS_REGION`.
    pub fn from_env() -> Self {
        Self {
            endpoint: std::env::var("DYNAMODB_ENDPOINT")
                .ok()
                .filter(|s| !s.is_empty()),
            region: std::env::var("AWS_REGION").ok().filter(|s| !s.is_empty()),
            ..Self::default()
        }
    }

    /// The same options with longer timeouts (20 s an attempt, 60 s an
    /// operation), for batch work (the rollup job, backfills) that reads
    /// whole days.
    pub fn for_batch(self) -> Self {
        Self {
            operation_timeout: Some(Duration::from_secs(60)),
            attempt_timeout: Some(Duration::from_secs(20)),
            ..self
        }
    }

    /// Options for a local endpoint.
    pub fn local(endpoint: &str) -> Self {
        Self {
            endpoint: Some(endpoint.to_owned()),
            ..Self::default()
        }
    }
}

/// The one HTTP client: hyper with rustls on ring (HTTPS to AWS, plain HTTP
/// to a local endpoint).
pub fn http_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

/// Builds the SDK client. With an endpoint and no credentials in the
/// environment, static local credentials are used, so no credential chain
/// (and no instance-metadata probe) runs on a laptop.
pub async fn build(options: &ClientOptions) -> Client {
    let timeout = TimeoutConfig::builder()
        .operation_timeout(options.operation_timeout.unwrap_or(Duration::from_secs(3)))
        .operation_attempt_timeout(options.attempt_timeout.unwrap_or(Duration::from_secs(2)))
        .connect_timeout(Duration::from_millis(500))
        .build();
    let retry = RetryConfig::standard().with_max_attempts(options.max_attempts.unwrap_or(3));
    let mut builder = match &options.endpoint {
        Some(endpoint) => {
            let has_env_credentials = std::env::var("AWS_ACCESS_KEY_ID").is_ok();
            let mut b = aws_sdk_dynamodb::Config::builder()
                .behavior_version(BehaviorVersion::latest())
                .http_client(http_client())
                .endpoint_url(endpoint)
                .region(Region::new(
                    options
                        .region
                        .clone()
                        .unwrap_or_else(|| "us-east-1".to_owned()),
                ));
            if has_env_credentials {
                let shared = aws_config::defaults(BehaviorVersion::latest())
                    .http_client(http_client())
                    .load()
                    .await;
                if let Some(provider) = shared.credentials_provider() {
                    b = b.credentials_provider(provider);
                }
            } else {
                b = b.credentials_provider(Credentials::new(
                    "local",
                    "local",
                    None,
                    None,
                    "tally-local",
                ));
            }
            b
        }
        None => {
            let mut loader =
                aws_config::defaults(BehaviorVersion::latest()).http_client(http_client());
            if let Some(region) = &options.region {
                loader = loader.region(Region::new(region.clone()));
            }
            let shared = loader.load().await;
            aws_sdk_dynamodb::config::Builder::from(&shared)
        }
    };
    builder = builder.timeout_config(timeout).retry_config(retry);
    if let Some(counter) = &options.counter {
        builder = builder.interceptor(CountingInterceptor(counter.clone()));
    }
    Client::from_conf(builder.build())
}

/// Counts DynamoDB requests per operation (every attempt, retries included)
/// and the read and write units the responses report.
#[derive(Debug, Default)]
pub struct RequestCounter {
    by_operation: Mutex<BTreeMap<String, u64>>,
    partitions: Mutex<std::collections::BTreeSet<String>>,
    total: AtomicU64,
    read_milli_units: AtomicU64,
    write_milli_units: AtomicU64,
}

impl RequestCounter {
    /// A new counter at zero, shared.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Every request sent so far.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::SeqCst)
    }

    /// Requests per operation name (`PutItem`, `Query`, …).
    pub fn by_operation(&self) -> BTreeMap<String, u64> {
        self.by_operation
            .lock()
            .map(|m| m.clone())
            .unwrap_or_default()
    }

    /// The partition keys the requests named (`Key`, `Item`, a Query's
    /// `:pk`, every item of a batch or transaction): what an IAM
    /// `dynamodb:LeadingKeys` condition must allow.
    pub fn partitions(&self) -> std::collections::BTreeSet<String> {
        self.partitions
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default()
    }

    /// Read units reported by responses that returned consumed capacity.
    pub fn read_units(&self) -> f64 {
        self.read_milli_units.load(Ordering::SeqCst) as f64 / 1000.0
    }

    /// Write units reported by responses that returned consumed capacity.
    pub fn write_units(&self) -> f64 {
        self.write_milli_units.load(Ordering::SeqCst) as f64 / 1000.0
    }

    /// Resets every figure to zero.
    pub fn reset(&self) {
        self.total.store(0, Ordering::SeqCst);
        self.read_milli_units.store(0, Ordering::SeqCst);
        self.write_milli_units.store(0, Ordering::SeqCst);
        if let Ok(mut m) = self.by_operation.lock() {
            m.clear();
        }
        if let Ok(mut p) = self.partitions.lock() {
            p.clear();
        }
    }

    pub(crate) fn add_read_units(&self, units: f64) {
        self.read_milli_units
            .fetch_add((units * 1000.0).round() as u64, Ordering::SeqCst);
    }

    pub(crate) fn add_write_units(&self, units: f64) {
        self.write_milli_units
            .fetch_add((units * 1000.0).round() as u64, Ordering::SeqCst);
    }

    fn record(&self, operation: &str, body: Option<&[u8]>) {
        self.total.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut m) = self.by_operation.lock() {
            *m.entry(operation.to_owned()).or_default() += 1;
        }
        let Some(request) = body.and_then(|b| serde_json::from_slice(b).ok()) else {
            return;
        };
        if let Ok(mut p) = self.partitions.lock() {
            p.extend(partition_keys(&request));
        }
    }
}

/// The `pk` values a DynamoDB JSON request names, wherever they sit.
fn partition_keys(request: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    let pk = |item: &Value| item["pk"]["S"].as_str().map(str::to_owned);
    let mut out = Vec::new();
    for field in ["Key", "Item"] {
        out.extend(pk(&request[field]));
    }
    out.extend(
        request["ExpressionAttributeValues"][":pk"]["S"]
            .as_str()
            .map(str::to_owned),
    );
    if let Some(tables) = request["RequestItems"].as_object() {
        for entry in tables.values() {
            // BatchGetItem: {Keys: [..]}; BatchWriteItem: [{PutRequest|DeleteRequest}].
            for key in entry["Keys"].as_array().into_iter().flatten() {
                out.extend(pk(key));
            }
            for write in entry.as_array().into_iter().flatten() {
                out.extend(pk(&write["PutRequest"]["Item"]));
                out.extend(pk(&write["DeleteRequest"]["Key"]));
            }
        }
    }
    for item in request["TransactItems"].as_array().into_iter().flatten() {
        for kind in ["Put", "Update", "Delete", "ConditionCheck"] {
            out.extend(pk(&item[kind]["Item"]));
            out.extend(pk(&item[kind]["Key"]));
        }
    }
    out
}

#[derive(Debug)]
struct CountingInterceptor(Arc<RequestCounter>);

impl Intercept for CountingInterceptor {
    fn name(&self) -> &'static str {
        "TallyRequestCounter"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let target = context
            .request()
            .headers()
            .get("x-amz-target")
            .unwrap_or("Unknown");
        let operation = target.rsplit('.').next().unwrap_or(target);
        self.0.record(operation, context.request().body().bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn builds_an_aws_client_with_the_rustls_ring_http_client() {
        let client = build(&ClientOptions {
            region: Some("eu-central-1".into()),
            ..ClientOptions::default()
        })
        .await;
        let config = client.config();
        assert_eq!(config.region().map(|r| r.as_ref()), Some("eu-central-1"));
        assert!(
            config.http_client().is_some(),
            "the SDK has an HTTP client (a missing one fails only at run time)"
        );
    }
}
