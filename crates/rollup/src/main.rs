//! The rollup Lambda: wiring only. It takes the hourly schedule's events
//! and the stack's `FirstOwner` custom resource requests.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use std::sync::Arc;
use tally_store::clock::SystemClock;
use tally_store::{ClientOptions, Store};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tally_lambda::logging::init_tracing();
    let options = ClientOptions::from_env().for_batch();
    let store = Arc::new(Store::connect(&options, &tally_store::env::table_name()).await);
    // Email reports go through SES from `EMAIL_FROM` (unset: none are
    // sent); their links point at `PUBLIC_URL`.
    let mailer = match tally_mail::SesOptions::from_env() {
        Some(ses) => Some(Arc::new(tally_mail::Ses::connect(&ses).await?)),
        None => None,
    };
    // Traffic alerts post webhooks with this client (the system's roots);
    // without it only their email channel could work, so the step is off.
    let webhooks = match tally_rollup::webhook::Webhooks::new(false) {
        Ok(w) => Some(Arc::new(w)),
        Err(e) => {
            tracing::error!(error = %e, "traffic alerts are off");
            None
        }
    };
    let public_url = std::env::var("PUBLIC_URL")
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_owned();
    run(service_fn(move |event: LambdaEvent<serde_json::Value>| {
        let store = store.clone();
        let mailer = mailer.clone();
        let webhooks = webhooks.clone();
        let public_url = public_url.clone();
        async move {
            // The stack's FirstOwner custom resource, or the schedule.
            if event.payload.get("RequestType").is_some() {
                let request: tally_rollup::first_owner::Request =
                    serde_json::from_value(event.payload)?;
                let Some(responder) = webhooks.as_deref() else {
                    return Err(Error::from("no HTTP client to answer CloudFormation"));
                };
                // The setup link's secret, when no mail takes it.
                let endpoint = std::env::var("SECRETS_ENDPOINT").ok();
                let vault = tally_lambda::secrets::Secrets::connect(endpoint.as_deref()).await;
                let outcome = tally_rollup::first_owner::handle(
                    &store,
                    mailer.as_deref().map(|m| m as &dyn tally_mail::Mailer),
                    Some(&vault),
                    responder,
                    request,
                    tally_store::clock::Clock::now(&SystemClock),
                )
                .await;
                return Ok(serde_json::json!({
                    "succeeded": outcome.succeeded,
                    "mailed": outcome.mailed,
                    "stored": outcome.stored
                }));
            }
            let payload: EventBridgeEvent<serde_json::Value> =
                serde_json::from_value(event.payload)?;
            let event = LambdaEvent::new(payload, event.context);
            let job = mailer.as_deref().map(|m| tally_rollup::reports::ReportJob {
                mailer: m,
                public_url: public_url.clone(),
                site: None,
            });
            let alerts = webhooks.as_deref().map(|w| tally_rollup::alerts::AlertJob {
                mailer: mailer.as_deref().map(|m| m as &dyn tally_mail::Mailer),
                poster: w,
                public_url: &public_url,
                site: None,
            });
            let report = tally_rollup::handler::handle_with_steps(
                &store,
                &SystemClock,
                event,
                job.as_ref(),
                alerts.as_ref(),
            )
            .await?;
            Ok::<_, Error>(serde_json::to_value(report)?)
        }
    }))
    .await
}
