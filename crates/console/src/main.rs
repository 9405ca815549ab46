//! The console Lambda: wiring only.

use lambda_http::{Error, Request, run, service_fn};
use std::sync::Arc;
use tally_console::{Config, handle};
use tally_store::clock::SystemClock;
use tally_store::{ClientOptions, Store};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tally_lambda::logging::init_tracing();
    let store =
        Arc::new(Store::connect(&ClientOptions::from_env(), &tally_store::env::table_name()).await);
    let config = Arc::new(Config::from_env(&tally_store::env::salt_secret()?).await?);
    run(service_fn(move |request: Request| {
        let (store, config) = (store.clone(), config.clone());
        async move { Ok::<_, Error>(handle(&*store, &SystemClock, &config, request).await) }
    }))
    .await
}
