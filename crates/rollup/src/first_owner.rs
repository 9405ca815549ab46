//! The first owner without a terminal (issue 30, item 3): a CloudFormation
//! custom resource (`FirstOwner` in `template.yaml`, served by this
//! function) mails a one-time setup link to the stack's `AdminEmail` when
//! it is created, or updated, while the instance has no owner, once per
//! table.
//!
//! The link is `{ConsoleUrl}#/setup/{token}`: a setup token as `tally
//! setup-token` makes it (only its SHA-256 stored, good once for 24
//! hours). Whatever happens, CloudFormation gets its answer (a PUT to the
//! request's `ResponseURL`): a mail that could not be sent, or no mailer,
//! is `SUCCESS` with `Mailed: "false"` and a log line saying so (the
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
}

/// Handles one request and answers CloudFormation.
pub async fn handle(
    store: &Store,
    mailer: Option<&dyn Mailer>,
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
            };
        }
    };
    let result = if delete {
        Ok(false)
    } else {
        mail_setup_link(store, mailer, &properties, now).await
    };
    let mut response = CloudFormationCustomResourceResponse::default();
    response.physical_resource_id = PHYSICAL_ID.to_owned();
    response.stack_id = stack_id;
    response.request_id = request_id;
    response.logical_resource_id = logical_id;
    let mailed = *result.as_ref().unwrap_or(&false);
    match &result {
        Ok(mailed) => {
            response.status = CloudFormationCustomResourceResponseStatus::Success;
            response
                .data
                .insert("Mailed".to_owned(), mailed.to_string());
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
    Outcome { succeeded, mailed }
}

/// Mails the setup link if there is an address, a mailer, no owner and
/// no link mailed before: whether it did. Errors only from the store.
async fn mail_setup_link(
    store: &Store,
    mailer: Option<&dyn Mailer>,
    properties: &Properties,
    now: Millis,
) -> Result<bool, tally_store::StoreError> {
    let to = properties.admin_email.trim();
    if to.is_empty() {
        return Ok(false);
    }
    let Some(mailer) = mailer else {
        tracing::warn!(
            "AdminEmail is set but no EMAIL_FROM: no setup link is mailed (make one with infra/scripts/setup-token.sh)"
        );
        return Ok(false);
    };
    if store.instance_owner().await?.is_some() || !store.claim_setup_mail(to, now).await? {
        return Ok(false);
    }
    let mut bytes = [0u8; 20];
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).is_err() {
        store.release_setup_mail().await?;
        tracing::error!("no system randomness for a setup token");
        return Ok(false);
    }
    let setup = token::setup_token(&bytes);
    store
        .put_setup_token(&SetupToken::new(token::hash_token(&setup), now))
        .await?;
    let link = format!(
        "{}#/setup/{setup}",
        properties.console_url.trim_end_matches('/')
    );
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
            Ok(true)
        }
        Err(e) => {
            tracing::error!(error = %e, "the setup link could not be mailed");
            store.release_setup_mail().await?;
            Ok(false)
        }
    }
}
