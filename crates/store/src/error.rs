//! One error type for every store failure, and the mapping from SDK errors.

use aws_sdk_dynamodb::error::SdkError;

/// A store failure. Callers map the transient ones to a 503.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// DynamoDB could not be reached, timed out, or failed on its side.
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
    /// DynamoDB throttled the request after the SDK's retries.
    #[error("the store is throttling requests")]
    Throttled,
    /// One partition key took more than its share of writes
    /// (`ProvisionedThroughputExceededException`), after the SDK's retries.
    #[error("the store is throttling writes to one key")]
    KeyThrottled,
    /// An item could not be read back into its type.
    #[error("corrupt item: {0}")]
    Corrupt(String),
    /// The request itself was refused (a bug or a misconfigured table).
    #[error("store request failed: {0}")]
    Request(String),
}

impl StoreError {
    /// Whether the failure is the store's (retry later) rather than ours.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Unavailable(_) | Self::Throttled | Self::KeyThrottled
        )
    }
}

/// The DynamoDB error code of a service error, if it is one.
pub fn service_code<E, R>(err: &SdkError<E, R>) -> Option<&str>
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    match err {
        SdkError::ServiceError(service) => service.err().code(),
        _ => None,
    }
}

/// A conditional write's answer: `Ok(true)` when it was made, `Ok(false)`
/// when its condition failed (`ConditionalCheckFailedException`), any
/// other failure mapped by [`from_sdk`].
pub(crate) fn condition_held<O, E, R>(result: Result<O, SdkError<E, R>>) -> Result<bool, StoreError>
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match result {
        Ok(_) => Ok(true),
        Err(err) if service_code(&err) == Some("ConditionalCheckFailedException") => Ok(false),
        Err(err) => Err(from_sdk(err)),
    }
}

/// Maps any SDK error to a [`StoreError`].
pub fn from_sdk<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match &err {
        SdkError::ServiceError(service) => {
            let code = service.err().code().unwrap_or("Unknown");
            match code {
                "ProvisionedThroughputExceededException" => StoreError::KeyThrottled,
                "ThrottlingException" | "RequestLimitExceeded" => StoreError::Throttled,
                "InternalServerError" | "ServiceUnavailable" | "InternalFailure" => {
                    StoreError::Unavailable(code.to_owned())
                }
                _ => StoreError::Request(format!(
                    "{code}: {}",
                    service.err().message().unwrap_or_default()
                )),
            }
        }
        SdkError::TimeoutError(_) => StoreError::Unavailable("timed out".to_owned()),
        SdkError::DispatchFailure(_) => StoreError::Unavailable("connection failed".to_owned()),
        SdkError::ResponseError(_) => StoreError::Unavailable("malformed response".to_owned()),
        _ => StoreError::Request(format!(
            "{}",
            aws_sdk_dynamodb::error::DisplayErrorContext(&err)
        )),
    }
}
