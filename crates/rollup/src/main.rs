//! The rollup Lambda: wiring only.

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
    run(service_fn(
        move |event: LambdaEvent<EventBridgeEvent<serde_json::Value>>| {
            let store = store.clone();
            let mailer = mailer.clone();
            let webhooks = webhooks.clone();
            let public_url = public_url.clone();
            async move {
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
                Ok::<_, Error>(
                    tally_rollup::handler::handle_with_steps(
                        &store,
                        &SystemClock,
                        event,
                        job.as_ref(),
                        alerts.as_ref(),
                    )
                    .await?,
                )
            }
        },
    ))
    .await
}
