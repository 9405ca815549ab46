//! The query Lambda: wiring only.

use lambda_http::{Error, Request, run, service_fn};
use std::sync::Arc;
use tally_query::store::DynamoQuery;
use tally_query::{Config, handle_with};
use tally_store::clock::SystemClock;
use tally_store::{ClientOptions, Store};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tally_lambda::logging::init_tracing();
    let store = Store::connect(&ClientOptions::from_env(), &tally_store::env::table_name()).await;
    let query = Arc::new(DynamoQuery::new(store));
    // The deployment secret (Secrets Manager on AWS) keys the credential
    // tags; read once, before the first request.
    let deployment = tally_lambda::secrets::deployment().await?;
    let config = Arc::new(Config {
        tag_keys: deployment.map(|d| d.tag_keys),
        ..Config::from_env()
    });
    run(service_fn(move |request: Request| {
        let (query, config) = (query.clone(), config.clone());
        async move { Ok::<_, Error>(handle_with(&*query, &SystemClock, &config, request).await) }
    }))
    .await
}
