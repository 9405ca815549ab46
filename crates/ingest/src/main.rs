//! The ingest Lambda: wiring only. It holds no secret: the daily salt is
//! random and shared through the table ([`tally_store::salt`]).

use lambda_http::{Error, Request, run, service_fn};
use std::sync::Arc;
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_store::clock::SystemClock;
use tally_store::salt::SharedSalt;
use tally_store::{ClientOptions, Store};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tally_lambda::logging::init_tracing();
    let store = Store::connect(&ClientOptions::from_env(), &tally_store::env::table_name()).await;
    let ingest = Arc::new(DynamoIngest::new(store, SharedSalt::new()));
    // Behind CloudFront, the origin secret (Secrets Manager on AWS), read
    // once before the first request.
    let origin = tally_lambda::secrets::origin().await?;
    let config = Arc::new(Config::from_env_with_origin(origin.as_deref()));
    run(service_fn(move |request: Request| {
        let (ingest, config) = (ingest.clone(), config.clone());
        async move { Ok::<_, Error>(handle(&*ingest, &SystemClock, &config, request).await) }
    }))
    .await
}
