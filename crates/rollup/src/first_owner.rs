//! The first owner without a terminal (issue 30, item 3): a CloudFormation
//! custom resource (`FirstOwner` in `template.yaml`, served by this
//! function) hands out a one-time setup link when the stack is created, or
//! updated, while the instance has no owner:
//!
//! - with `AdminEmail` and a mailer, it mails the link there, once per
//!   table;
//! - otherwise (no address, no SES, or SES refused), it writes the link
//!   into the stack's `SetupLinkSecret` (a Secrets Manager secret the
//!   `SetupLink` output names), a fresh one on each create or update
//!   while there is no owner.
//!
//! The link is `{ConsoleUrl}#/setup/{token}`: a setup token as `tally
//! setup-token` makes it (only its SHA-256 stored, good once for 24
//! hours). Whatever happens, CloudFormation gets its answer (a PUT to the
//! request's `ResponseURL`): a link neither mailed nor stored is `SUCCESS`
//! with `Mailed` and `Stored` `"false"` and a log line saying why (the
//! deploy goes on; `infra/scripts/setup-token.sh` makes a token by hand);
//! only a store failure is `FAILED`. Deleting the resource does nothing.

use crate::alerts::PostFuture;
use aws_lambda_events::cloudformation::{
    CloudFormationCustomResourceRequest, CloudFormationCustomResourceResponse,
    CloudFormationCustomResourceResponseStatus,
};
use serde::{Deserialize, Serialize};
use tally_core::Millis;
use tally_core::account::{SetupToken, token};
use tally_lambda::secrets::Secrets;
use tally_mail::{Mailer, Message};
use tally_store::Store;

/// The resource's properties in `template.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Properties {
    /// Where the setup link goes (empty: nowhere).
    #[serde(default)]
    pub admin_email: String,
    /// The console's URL (the `ConsoleUrl` output).
    #[serde(default)]
    pub console_url: String,
    /// The ARN of the secret a link not mailed is written to (empty:
    /// none).
    #[serde(default)]
    pub setup_link_secret: String,
}

/// A custom resource request of this resource.
pub type Request = CloudFormationCustomResourceRequest<Properties, Properties>;

/// The resource's physical id: one per stack, never replaced.
pub const PHYSICAL_ID: &str = "tally-first-owner";

/// Answers CloudFormation: PUTs the response to the presigned URL.
pub trait Responder: Send + Sync {
    /// PUTs `body` (JSON, no content type, as CloudFormation's presigned
    /// URL requires) to `url`: the status, or why it failed.
    fn put<'a>(&'a self, url: &'a str, body: String) -> PostFuture<'a>;
}

/// What handling a request did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Whether CloudFormation was told `SUCCESS`.
    pub succeeded: bool,
    /// Whether a setup link was mailed.
    pub mailed: bool,
    /// Whether a setup link was written to the setup-link secret.
    pub stored: bool,
}

/// Where a setup link went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Delivered {
    mailed: bool,
    stored: bool,
}

/// Handles one request and answers CloudFormation.
pub async fn handle(
    store: &Store,
    mailer: Option<&dyn Mailer>,
    vault: Option<&Secrets>,
    responder: &dyn Responder,
    request: Request,
    now: Millis,
) -> Outcome {
    // The same fields of each kind of request.
    macro_rules! fields {
        ($r:expr, $delete:expr) => {
            (
                $r.response_url,
                $r.stack_id,
                $r.request_id,
                $r.logical_resource_id,
                $r.resource_properties,
                $delete,
            )
        };
    }
    let (url, stack_id, request_id, logical_id, properties, delete) = match request {
        CloudFormationCustomResourceRequest::Create(r) => fields!(r, false),
        CloudFormationCustomResourceRequest::Update(r) => fields!(r, false),
        CloudFormationCustomResourceRequest::Delete(r) => fields!(r, true),
        _ => {
            tracing::error!("a custom resource request of an unknown type");
            return Outcome {
                succeeded: false,
                mailed: false,
                stored: false,
            };
        }
    };
    let result = if delete {
        Ok(Delivered::default())
    } else {
        deliver_setup_link(store, mailer, vault, &properties, now).await
    };
    let mut response = CloudFormationCustomResourceResponse::default();
    response.physical_resource_id = PHYSICAL_ID.to_owned();
    response.stack_id = stack_id;
    response.request_id = request_id;
    response.logical_resource_id = logical_id;
    let delivered = result.as_ref().copied().unwrap_or_default();
    match &result {
        Ok(delivered) => {
            response.status = CloudFormationCustomResourceResponseStatus::Success;
            response
                .data
                .insert("Mailed".to_owned(), delivered.mailed.to_string());
            response
                .data
                .insert("Stored".to_owned(), delivered.stored.to_string());
        }
        Err(e) => {
            tracing::error!(error = %e, "the first owner's setup link");
            response.status = CloudFormationCustomResourceResponseStatus::Failed;
            response.reason = Some(format!("Tally could not read its table: {e}"));
        }
    }
    let succeeded = result.is_ok();
    let body = serde_json::to_string(&response).unwrap_or_default();
    match responder.put(&url, body).await {
        Ok(code) if (200..300).contains(&code) => {}
        Ok(code) => tracing::error!(status = code, "CloudFormation refused the answer"),
        Err(e) => tracing::error!(error = %e, "CloudFormation could not be answered"),
    }
    Outcome {
        succeeded,
        mailed: delivered.mailed,
        stored: delivered.stored,
    }
}

/// Hands out a setup link while there is no owner: mailed when there is
/// an address, a mailer and no link mailed before; else written to the
/// setup-link secret when there is one. Errors only from the store.
async fn deliver_setup_link(
    store: &Store,
    mailer: Option<&dyn Mailer>,
    vault: Option<&Secrets>,
    properties: &Properties,
    now: Millis,
) -> Result<Delivered, tally_store::StoreError> {
    if store.instance_owner().await?.is_some() {
        return Ok(Delivered::default());
    }
    let to = properties.admin_email.trim();
    // A link not mailed (SES refused) is the one stored below.
    let mut unsent = None;
    match mailer {
        Some(mailer) if !to.is_empty() => {
            if !store.claim_setup_mail(to, now).await? {
                // Mailed before, by this stack or an earlier one.
                return Ok(Delivered::default());
            }
            unsent = new_link(store, properties, now).await?;
            if let Some(link) = &unsent
                && mail_link(mailer, to, link).await
            {
                return Ok(Delivered {
                    mailed: true,
                    stored: false,
                });
            }
            store.release_setup_mail().await?;
        }
        None if !to.is_empty() => tracing::warn!(
            "AdminEmail is set but no EMAIL_FROM: the setup link goes to the SetupLink output's secret"
        ),
        _ => {}
    }
    let (Some(vault), arn) = (vault, properties.setup_link_secret.trim()) else {
        return Ok(Delivered::default());
    };
    if arn.is_empty() {
        return Ok(Delivered::default());
    }
    let link = match unsent {
        Some(link) => link,
        None => match new_link(store, properties, now).await? {
            Some(link) => link,
            None => return Ok(Delivered::default()),
        },
    };
    match vault.put(arn, &link).await {
        Ok(()) => {
            tracing::info!(
                event = "setup_link_stored",
                "the first owner's setup link is in the SetupLink output's secret"
            );
            Ok(Delivered {
                mailed: false,
                stored: true,
            })
        }
        Err(e) => {
            tracing::error!(error = %e, "the setup link could not be stored");
            Ok(Delivered::default())
        }
    }
}

/// A new setup token stored, as its link; `None` without system
/// randomness.
async fn new_link(
    store: &Store,
    properties: &Properties,
    now: Millis,
) -> Result<Option<String>, tally_store::StoreError> {
    let mut bytes = [0u8; 20];
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).is_err() {
        tracing::error!("no system randomness for a setup token");
        return Ok(None);
    }
    let setup = token::setup_token(&bytes);
    store
        .put_setup_token(&SetupToken::new(token::hash_token(&setup), now))
        .await?;
    Ok(Some(format!(
        "{}#/setup/{setup}",
        properties.console_url.trim_end_matches('/')
    )))
}

/// Mails `link` to `to`: whether SES took it.
async fn mail_link(mailer: &dyn Mailer, to: &str, link: &str) -> bool {
    let message = Message::new(
        to,
        "Your Tally is ready: create the owner account",
        format!(
            "Tally is deployed. Open this link within 24 hours to create the instance owner's account (it works once):\n\n{link}\n\nIf you did not deploy Tally, ignore this mail."
        ),
    );
    match mailer.send(&message).await {
        Ok(()) => {
            tracing::info!(
                event = "setup_link_mailed",
                "the first owner's setup link was mailed"
            );
            true
        }
        Err(e) => {
            tracing::error!(error = %e, "the setup link could not be mailed");
            false
        }
    }
}
