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
    run(service_fn(
        move |event: LambdaEvent<EventBridgeEvent<serde_json::Value>>| {
            let store = store.clone();
            async move {
                Ok::<_, Error>(tally_rollup::handler::handle(&store, &SystemClock, event).await?)
            }
        },
    ))
    .await
}
