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
    // The deployment secret (Secrets Manager on AWS), read once before
    // the first request; outside production without one, a random
    // per-process secret (with a warning).
    let config = match tally_lambda::secrets::deployment().await? {
        Some(d) => Config::from_env(&d.secret, Some(d.tag_keys)).await?,
        None => Config::from_env(&tally_store::env::salt_secret()?, None).await?,
    };
    let config = Arc::new(config);
    run(service_fn(move |request: Request| {
        let (store, config) = (store.clone(), config.clone());
        async move { Ok::<_, Error>(handle(&*store, &SystemClock, &config, request).await) }
    }))
    .await
}
